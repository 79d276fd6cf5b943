"""PS1 VRAM codecs (gamemesh.textures.psx): colour words, index packing, pages, quantization."""

from __future__ import annotations

import numpy as np

from gamemesh.textures import psx


def test_colour_words_round_trip_and_transparency() -> None:
    words = np.arange(1, 0x8000, dtype=np.uint16)
    rgba = psx.words_to_rgba(words)
    assert (rgba[:, 3] == 255).all()
    assert np.array_equal(psx.rgba_to_words(rgba), words)
    assert tuple(psx.words_to_rgba(np.uint16(0))) == (0, 0, 0, 0)
    assert tuple(psx.words_to_rgba(np.uint16(0x8000))) == (0, 0, 0, 255)
    assert tuple(psx.words_to_rgba(np.uint16(0x001F))) == (255, 0, 0, 255)
    assert tuple(psx.words_to_rgba(np.uint16(0x7C00 | 0x0001))) == (8, 0, 255, 255)
    # Opaque black is written 0x8000 (never the transparent 0x0000); low alpha is 0x0000.
    assert psx.rgba_to_words(np.array([0, 0, 0, 255], np.uint8)) == 0x8000
    assert psx.rgba_to_words(np.array([200, 10, 10, 100], np.uint8)) == 0x0000
    big = np.random.default_rng(1).integers(0, 0x10000, size=(64, 64), dtype=np.uint16)
    assert np.array_equal(psx.words_to_rgba(big), psx.words_to_rgba(big.reshape(-1)).reshape(
        64, 64, 4))


def test_index_packing_puts_the_leftmost_texel_in_the_low_bits() -> None:
    assert psx.pack_indices(np.array([[1, 2, 3, 4]]), 4)[0, 0] == 0x4321
    assert psx.pack_indices(np.array([[0x12, 0x34]]), 8)[0, 0] == 0x3412
    rng = np.random.default_rng(2)
    for bpp in (4, 8):
        idx = rng.integers(0, 1 << bpp, size=(7, 64))
        assert np.array_equal(psx.unpack_indices(psx.pack_indices(idx, bpp), bpp), idx)
    # widths that are not a multiple of the texels per word are padded with index 0
    assert psx.pack_indices(np.array([[5]]), 4).shape == (1, 1)


def test_decode_page_reads_vram_like_the_gpu() -> None:
    vram = np.zeros((512, 1024), np.uint16)
    psx.blit(vram, 960, 0, psx.pack_indices(np.array([[1, 2, 3, 4]]), 4))
    psx.blit(vram, 16, 300, np.array([0, 0x001F, 0x03E0, 0x7C00, 0x7FFF], np.uint16))
    page = psx.decode_page(vram, 0x020F, 16, 300, clut_count=4)
    assert tuple(page[0, 0]) == (255, 0, 0, 255)
    assert tuple(page[0, 2]) == (0, 0, 255, 255)
    assert page[0, 3, 3] == 0  # index 4 is past the 4-entry CLUT: transparent
    assert page[1, 0, 3] == 0  # index 0 -> word 0x0000
    # a 16 bpp page at x = 960 wraps round to x = 0 like the GPU's addressing
    vram[256, 0] = 0x7FFF
    wrap = psx.decode_page(vram, 0x001F | (2 << 7), 0, 0)  # x = 960, y = 256, 16 bpp
    assert tuple(wrap[0, 64]) == (255, 255, 255, 255)
    assert psx.tpage_depth(0x0285) == 8 and psx.page_origin(0x0285) == (320, 0)
    sheet = psx.vram_to_rgba(vram)
    assert sheet.shape == (512, 1024, 4) and (sheet[..., 3] == 255).all()


def test_quantize_exact_and_lossy() -> None:
    px = np.zeros((8, 8, 4), np.uint8)
    px[..., 3] = 255
    px[:4] = (255, 0, 0, 255)
    px[0, 0, 3] = 0
    idx, pal, lossy = psx.quantize(px, 16)
    assert not lossy and pal[0] == 0 and len(pal) == 3
    assert np.array_equal(psx.words_to_rgba(pal[idx])[..., :3][px[..., 3] > 0],
                          px[..., :3][px[..., 3] > 0])
    rng = np.random.default_rng(3)
    noisy = rng.integers(0, 256, size=(32, 32, 4), dtype=np.uint8)
    noisy[..., 3] = 255
    idx, pal, lossy = psx.quantize(noisy, 256)
    assert lossy and len(pal) <= 256 and int(idx.max()) < len(pal)
    assert 0 not in pal  # no opaque colour became transparent
    again = psx.index_with_palette(psx.words_to_rgba(pal[idx]), pal)
    assert again is not None and np.array_equal(pal[again], pal[idx])

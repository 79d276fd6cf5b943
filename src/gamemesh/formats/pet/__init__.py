"""PET: Pangya "Puppet" models (Ntreev Soft, "WangReal" engine): ``.pet`` (items, clubs, course
objects), ``.bpet`` (character skeletons), ``.mpet`` (character parts) and ``.apet`` (motions).

Versions 1.0 (no VERS section), 1.1, 1.2 and 1.3; every kind reads and writes. Spec:
``shared/specs/pet.md`` (research notes, with a worked byte layout in §B.18); facts from the public
readers Acrisio-Filho/pet-source_tools, Acrisio-Filho/SuperSS-Dev, lbarceloss/GhostMapEditor,
danielagff/PangyaWeb, retreev/PangLib and retreev/io_scene_mpet, and pangbox/yabang's engine
headers. No code is taken from them. No real file is public: the fixtures are made by this
package's own writer (``sample.build``).

A character is several files: ``load`` assembles the ``.bpet`` skeleton, ``.mpet`` parts (matched
by bone name) and ``.apet`` motions given with ``with`` or found by the name-prefix rule (with
``character``, and by default when the file loaded is a ``.bpet``); ``siblings`` lists the files
a load reads with no options.
"""

from __future__ import annotations

from ...registry import FormatSpec, Option
from .document import PetDocument
from .files import character_files, siblings
from .from_scene import from_scene, save
from .info import info
from .layout import EXTENSIONS, KINDS
from .read import read, sniff
from .sample import sample_bytes
from .to_scene import load, to_scene
from .write import write

__all__ = ["SPEC", "PetDocument", "character_files", "info", "load", "read", "siblings", "sniff",
           "write"]


SPEC = FormatSpec(
    name="pet",
    title="Pangya Puppet (.pet/.apet/.bpet/.mpet)",
    extensions=EXTENSIONS,
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    load=load,
    save=save,
    info=info,
    siblings=siblings,
    document_type=PetDocument,
    make_sample=sample_bytes,
    options=(
        Option("kind", "PET kind when the extension does not say (or to override it)",
               choices=KINDS),
        Option("pet_version", "PET version to write (1.0 to 1.3; default 1.3)",
               choices=("1.0", "1.1", "1.2", "1.3")),
        Option("texture_dir", "another folder to look for textures in", multiple=True),
        Option("max_influences", "keep at most this many bone influences per vertex "
               "(the largest, renormalized)", type=int),
        Option("with", "another file of the character (.bpet/.mpet/.apet) to assemble",
               multiple=True),
        Option("character", "assemble the character from the files sharing the name prefix "
               "(a .bpet does this unless --with or --no-parts is given)",
               type=bool, default=False),
        Option("no_parts", "convert a .bpet alone, without its character's parts", type=bool,
               default=False),
    ),
    notes="kind from the extension; characters assemble with --with or --character",
)

"""Coverage-guided fuzz targets (atheris), one per format: see docs/fuzzing.md."""

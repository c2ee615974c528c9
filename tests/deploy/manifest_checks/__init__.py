"""The checks of tests/deploy/check_manifests.py, one module per kind of file."""

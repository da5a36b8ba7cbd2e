"""Test suite of the harness package (a package so helpers import as ``tests.<module>``)."""

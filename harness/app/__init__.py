"""The Hydra application: configs, the study runner, the sweep callback."""

"""The concept-space probe: reading images as concept coordinates (probe), its training
(probe_train), and the images it must refuse (unreadable)."""

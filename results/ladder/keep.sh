#!/usr/bin/env bash
# What results/ keeps of a training run, no checkpoints (see python -m pipeline.keep --help):
#
#   bash results/ladder/keep.sh RUN_DIR DEST_DIR      copy them into DEST_DIR
exec python -m pipeline.keep "$@"

#!/bin/sh
# The masked split-window DAgger runs of 2026-11-28 (docs/benchmarks.md, "Split window with the invalid slots
# masked"). From the repository root:  sh training/splitwindow-m20-10-10-mask/run.sh OUT HEAD TAIL HH:MM [flags]
#   scratch pair:  ... OUT 10 10 HH:MM --clone-episodes 5 --clone-epochs 20   (and OUT 20 0 ...)
#   candidate:     ... training/splitwindow-m20-10-10-mask-perm 10 10 HH:MM --clone-from training/splitwindow-m20-10-10-mask/best.pt --bc-permute 1 --bc-epochs 5
# add --resume to continue a run from its checkpoint.pt and dagger-data-R.npz.
OUT=$1; H=$2; T=$3; U=$4; shift 4
exec nice -n 10 rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf \
  --head "$H" --tail "$T" --placements 1000 --hidden 1024,512,256 --start-range 0,0.8 --epochs 0 --torch-threads 1 \
  --out "$OUT" --select-every 1 --until "$U" --mask-invalid \
  --dagger-rounds 60 --dagger-episodes 2 --bc-epochs 10 --clone-lr 1e-3 --no-progress "$@"

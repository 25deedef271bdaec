#!/bin/sh
# usage: sh training/splitwindow-m20-20-0-dagger/run.sh HH:MM [ROUNDS] [extra flags]  (from the repository root;
# add --resume to go on: finished rounds are read back from dagger.json and dagger-data-R.npz)
U=$1; R=${2:-40}; shift; shift
exec nice -n 10 rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf \
  --head 20 --tail 0 --placements 1000 --hidden 1024,512,256 --start-range 0,0.8 --epochs 0 --torch-threads 1 \
  --out training/splitwindow-m20-20-0-dagger --select-every 1 --until "$U" \
  --clone-episodes 5 --clone-epochs 10 \
  --dagger-rounds "$R" --dagger-episodes 2 --bc-epochs 2 --clone-lr 1e-3 --no-progress "$@"

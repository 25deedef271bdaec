#!/bin/sh
# usage: sh training/splitwindow-m20-10-10-anchor/run.sh HH:MM [extra flags, e.g. --resume]  (from the repository root)
U=$1; shift
exec nice -n 10 rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf \
  --head 10 --tail 10 --placements 1000 --hidden 1024,512,256 --start-range 0,0.8 --epochs 100000 \
  --out training/splitwindow-m20-10-10-anchor --select-every 5 --until "$U" \
  --clone-from training/splitwindow-m20-10-10-clone/best.pt --critic-warmup 10 --anchor-kl 1 --pi-lr 3e-5 \
  --no-progress "$@"

#!/bin/sh
# PPO fine-tuning of the split window 10-10 from the best DAgger clone, anchored to it (issue 24 §4).
# usage (from the repository root; background; stops cleanly after the epoch in which HH:MM UTC passes,
# or when a file STOP appears in the folder; the same command continues a stopped run):
#   nohup sh training/splitwindow-m20-10-10-dagger-ppo/run.sh HH:MM >> training/splitwindow-m20-10-10-dagger-ppo/train.log 2>&1 &
# First step: the clone is loaded from the DAgger run's best.pt and scored as epoch 0 (selection.json holds the
# validation references already); epochs 1-10 train only the critic; then PPO at lr 3e-5 with β = 1 · KL(clone ‖ π).
U=$1; shift
OUT=training/splitwindow-m20-10-10-dagger-ppo
if [ -f "$OUT/checkpoint.pt" ]; then START=--resume; else START="--clone-from training/splitwindow-m20-10-10-dagger/best.pt"; fi
exec nice -n 10 rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf \
  --head 10 --tail 10 --placements 1000 --hidden 1024,512,256 --start-range 0,0.8 --epochs 100000 \
  --out "$OUT" --select-every 5 --until "$U" $START --critic-warmup 10 --anchor-kl 1 --pi-lr 3e-5 \
  --no-progress "$@"

#!/bin/sh
# PPO fine-tuning of a masked split-window DAgger model (issue 24 §4, seventh session): the paper's reward,
# anchored to the DAgger actor it starts from. From the repository root (background; stops cleanly after the
# epoch in which HH:MM UTC passes, or when OUT/STOP appears; the same command continues a stopped run):
#   nohup sh training/splitwindow-m20-10-10-mask-ppo/run.sh OUT HEAD TAIL FROM HH:MM >> OUT/train.log 2>&1 &
#   10-10:  OUT=training/splitwindow-m20-10-10-mask-ppo  FROM=training/splitwindow-m20-10-10-mask-perm/best.pt
#   20-0:   OUT=training/splitwindow-m20-20-0-mask-ppo   FROM=training/splitwindow-m20-20-0-mask-perm/best.pt
# Epoch 0 scores the starting actor on validation; epochs 1-5 train only the critic; then PPO at lr 1e-4 with
# β = 0.3 · KL(start ‖ π) (the earlier anchored run at lr 3e-5, β = 1 did not move in 12 epochs).
OUT=$1; H=$2; T=$3; FROM=$4; U=$5; shift 5
if [ -f "$OUT/checkpoint.pt" ]; then START=--resume; else START="--clone-from $FROM"; fi
exec nice -n 10 rtsched rl train --agent splitwindow --trace ../shared/data/traces/swf/lublin_256.swf \
  --head "$H" --tail "$T" --placements 1000 --hidden 1024,512,256 --start-range 0,0.8 --epochs 100000 \
  --torch-threads 1 --mask-invalid --out "$OUT" --select-every 5 --until "$U" $START \
  --critic-warmup 5 --anchor-kl 0.3 --pi-lr 1e-4 --no-progress "$@"

#!/usr/bin/env bash
# Table 3 at Multi30k scale (chapter 16, nbs/16_variations.ipynb): train every row with the multi30k-cpu recipe at a fixed budget of
# updates, one after another. Resumable: a row whose runs/table3/<row>/results.json exists is skipped, and a
# row that was interrupted resumes from its last checkpoint (every 100 updates) when the script runs again.
#
# usage (from the repository root):
#   tools/table3.sh [--dry-run] [--until HH:MM] [ROW|GROUP ...]
#     ROW     a row name (base, base-s1, A-h1, ..., E-learned); GROUP: A, B, C, D, E or base (all rows starting so)
#     --until do not START a row after this time of day (a running row is not stopped; if it is killed later,
#             the next invocation resumes it)
#     --dry-run  print what would run (and the time estimates), run nothing, create nothing
# environment:
#   SRC, TGT        direction (default en, de: the paper's Table 3 is EN-DE)
#   UPDATES         updates per row (default 2000)
#   ANNOTATED_TX_DATA  data root (default ../shared/data, made absolute)
#   AT              the annotated-tx executable (default .venv/bin/annotated-tx, else the one on PATH)
#   KEEP_GOING=1    go on with the next row when one fails (default: stop at the first failure)
#   OMP_NUM_THREADS threads per row (default 1: a row then uses one core steadily, and other work on the
#                   machine slows it in proportion instead of stalling its threads; the minutes in the table are
#                   one-thread minutes)
# To stop after the current row: touch runs/table3/STOP (it stays there: delete it before the next run).
# Several drivers may run at once (e.g. two, each row on one thread, on a 2-core machine): a driver takes a row by
# creating runs/table3/<row>.lock and skips rows that another live driver holds or that a training process is
# already writing.
set -u -o pipefail

SRC=${SRC:-en}; TGT=${TGT:-de}; UPDATES=${UPDATES:-2000}; KEEP_GOING=${KEEP_GOING:-0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
OUT=runs/table3

# Priority order: one row per claim of the paper and the seed-noise row first, then the rest of each group.
ORDER=(base base-s1 A-h1 A-h32 B-dk8 C-N1 C-N4 D-drop0.0 D-ls0.0 E-learned
       A-h4 A-h16 B-dk16 D-drop0.2 D-ls0.2 C-N2 C-d128 C-ff512 C-ff2048
       C-d512)

declare -A SETS EST   # the row's own --set values; estimated minutes (guesses made before the runs; the real ones land in results.json)
SETS[base]="";                                                                  EST[base]=35
SETS[base-s1]="train.seed=1";                                                   EST[base-s1]=35
SETS[A-h1]="model_overrides.n_heads=1 model_overrides.d_k=256 model_overrides.d_v=256";   EST[A-h1]=35
SETS[A-h4]="model_overrides.n_heads=4 model_overrides.d_k=64 model_overrides.d_v=64";     EST[A-h4]=35
SETS[A-h16]="model_overrides.n_heads=16 model_overrides.d_k=16 model_overrides.d_v=16";   EST[A-h16]=38
SETS[A-h32]="model_overrides.n_heads=32 model_overrides.d_k=8 model_overrides.d_v=8";     EST[A-h32]=42
SETS[B-dk16]="model_overrides.d_k=16";                                          EST[B-dk16]=33
SETS[B-dk8]="model_overrides.d_k=8";                                            EST[B-dk8]=32
SETS[C-N1]="model_overrides.n_enc_layers=1 model_overrides.n_dec_layers=1";     EST[C-N1]=22
SETS[C-N2]="model_overrides.n_enc_layers=2 model_overrides.n_dec_layers=2";     EST[C-N2]=29
SETS[C-N4]="model_overrides.n_enc_layers=4 model_overrides.n_dec_layers=4";     EST[C-N4]=41
SETS[C-d128]="model_overrides.d_model=128";                                     EST[C-d128]=20
SETS[C-d512]="model_overrides.d_model=512";                                     EST[C-d512]=78
SETS[C-ff512]="model_overrides.d_ff=512";                                       EST[C-ff512]=30
SETS[C-ff2048]="model_overrides.d_ff=2048";                                     EST[C-ff2048]=46
SETS[D-drop0.0]="model_overrides.dropout=0.0";                                  EST[D-drop0.0]=35
SETS[D-drop0.2]="model_overrides.dropout=0.2";                                  EST[D-drop0.2]=35
SETS[D-ls0.0]="train.label_smoothing=0.0";                                      EST[D-ls0.0]=35
SETS[D-ls0.2]="train.label_smoothing=0.2";                                      EST[D-ls0.2]=35
SETS[E-learned]="model_overrides.positional=learned";                           EST[E-learned]=35
# PINNED: the rows were run before emb_init existed, when the embeddings were Xavier-initialised like every matrix
PINNED="model_overrides.emb_init=xavier"
# THEN: the 0.3.0 preset, which the rows were run with (today's multi30k-cpu: lr_factor 1.0, label_smoothing 0.2, alpha 1.0)
THEN="train.lr_factor=0.7 train.label_smoothing=0.1 alpha=0.6"
BUDGET="train.max_minutes=0 train.max_updates=$UPDATES train.cooldown=0.3 train.checkpoint_every_minutes=0 train.checkpoint_every_updates=100 train.val_every=100"

die() { echo "table3: error: $*" >&2; exit 2; }

# ---- arguments
DRY=0; UNTIL=""; PICK=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --until) [ $# -ge 2 ] || die "--until needs HH:MM"; UNTIL=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) PICK+=("$1") ;;
  esac
  shift
done
[ -f pyproject.toml ] && [ -d nbs ] || die "run this from the repository root (no pyproject.toml / nbs here)"
[ "${#SETS[@]}" -eq "${#ORDER[@]}" ] || die "internal: ORDER and SETS list different rows"
DEADLINE=""
if [ -n "$UNTIL" ]; then
  DEADLINE=$(date -d "today $UNTIL" +%s 2>/dev/null) || die "--until expects HH:MM, got '$UNTIL'"
fi

ROWS=()
if [ ${#PICK[@]} -eq 0 ]; then ROWS=("${ORDER[@]}")
else
  for p in "${PICK[@]}"; do
    found=0
    for r in "${ORDER[@]}"; do
      if [ "$r" = "$p" ] || [[ "$r" == "$p"-* ]]; then ROWS+=("$r"); found=1; fi
    done
    [ $found -eq 1 ] || die "no row or group named '$p' (rows: ${ORDER[*]})"
  done
fi

if [ -z "${AT:-}" ]; then
  if [ -x .venv/bin/annotated-tx ]; then AT=.venv/bin/annotated-tx
  elif command -v annotated-tx >/dev/null; then AT=$(command -v annotated-tx)
  elif [ $DRY -eq 1 ]; then AT=annotated-tx
  else die "annotated-tx not found (activate the environment, or set AT=...)"; fi
fi
DATA=${ANNOTATED_TX_DATA:-../shared/data}
if [ -d "$DATA" ]; then DATA=$(cd "$DATA" && pwd)
elif [ $DRY -eq 0 ]; then die "data root $DATA does not exist (set ANNOTATED_TX_DATA)"; fi
TIMER=(); [ -x /usr/bin/time ] && TIMER=(/usr/bin/time -v)

# ---- plan
todo=0; left=0
echo "Table 3 rows, $SRC->$TGT, $UPDATES updates each, $OMP_NUM_THREADS thread(s) per row, data $DATA"
for r in "${ROWS[@]}"; do
  if [ -f "$OUT/$r/results.json" ]; then state="done"
  elif [ -d "$OUT/$r/checkpoints" ]; then state="partial (resumes)"; todo=$((todo + 1)); left=$((left + ${EST[$r]}))
  else state="to run"; todo=$((todo + 1)); left=$((left + ${EST[$r]})); fi
  printf '  %-10s %-18s est. %3d min\n' "$r" "$state" "${EST[$r]}"
done
echo "  $todo rows to run, about $left min of CPU by the estimates (partial rows counted in full)"

command_for() {   # the row's command as an array in CMD
  local r=$1 s
  CMD=("$AT" train --preset multi30k-cpu --src "$SRC" --tgt "$TGT" --out "$OUT/$r" --no-download --no-progress)
  for s in $THEN $BUDGET ${SETS[$r]} $PINNED; do CMD+=(--set "$s"); done
}

if [ $DRY -eq 1 ]; then
  for r in "${ROWS[@]}"; do
    [ -f "$OUT/$r/results.json" ] && continue
    command_for "$r"; echo "ANNOTATED_TX_DATA=$DATA ${CMD[*]}"
  done
  exit 0
fi

# ---- run
mkdir -p "$OUT"
HELD=""; trap '[ -n "$HELD" ] && rm -rf "$HELD"' EXIT
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
echo "load average now: $load (timings are only meaningful on an otherwise idle machine)"
failed=0
for r in "${ROWS[@]}"; do
  if [ -f "$OUT/$r/results.json" ]; then continue; fi
  if [ -f "$OUT/STOP" ]; then echo "found $OUT/STOP: stopping before $r (delete it to continue)"; break; fi
  if [ -n "$DEADLINE" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "it is past $UNTIL: not starting $r"; break; fi
  if pgrep -f -- "--out $OUT/$r --" >/dev/null; then echo "$r is being trained by another process: skipping"; continue; fi
  lock="$OUT/$r.lock"
  if ! mkdir "$lock" 2>/dev/null; then
    owner=$(cat "$lock/pid" 2>/dev/null || true)
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then echo "$r is taken by driver $owner: skipping"; continue; fi
    echo "$r: taking over the stale lock of driver ${owner:-?}"
  fi
  echo $$ > "$lock/pid"; HELD=$lock
  command_for "$r"
  log="$OUT/$r.log"
  start=$(date -u +%FT%TZ)
  echo "[$start] $r (est. ${EST[$r]} min): ANNOTATED_TX_DATA=$DATA ${CMD[*]}"
  {
    echo "=== $start  load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
    echo "=== ANNOTATED_TX_DATA=$DATA ${CMD[*]}"
  } >> "$log"
  ANNOTATED_TX_DATA=$DATA "${TIMER[@]}" "${CMD[@]}" >> "$log" 2>&1
  rc=$?
  end=$(date -u +%FT%TZ)
  echo "=== $end  rc $rc  load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >> "$log"
  echo "$r start $start end $end rc $rc load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >> "$OUT/driver.log"
  rm -rf "$lock"; HELD=""
  if [ $rc -ne 0 ] || [ ! -f "$OUT/$r/results.json" ]; then
    echo "[$end] $r FAILED (rc $rc); see $log"; failed=$((failed + 1))
    grep -a -v $'^\t' "$log" | tail -n 5 | sed 's/^/    /'   # the last lines before GNU time's report
    [ "$KEEP_GOING" = 1 ] || exit 1
  else
    grep -a "updates in" "$log" | tail -n 1 | sed 's/^/   /' || true
    echo "[$end] $r done"
  fi
done
[ $failed -eq 0 ] || exit 1

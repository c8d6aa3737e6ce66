#!/usr/bin/env python3
"""Keep the record of a finished training run in the repository, without its weights, so that a chapter can print
its figures from it: recipe.json, host.json, results.json, the validation records, every 10th update of the log
(and the update where `dropout_by_budget` chose P_drop), and the translations. Usage (from the repository root):

    python3 tools/keep_run.py runs/multi30k-cpu-de-en nbs/kept/multi30k-cpu-de-en
"""
import json, shutil, sys
from pathlib import Path

def keep(run: Path, dest: Path, every: int = 10) -> None:
    for name in ("recipe.json", "results.json"):
        if not (run / name).is_file(): sys.exit(f"keep_run: {run / name} is missing: is {run} a finished run?")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("recipe.json", "host.json", "results.json"):
        if (run / name).is_file(): shutil.copyfile(run / name, dest / name)
        else: print(f"keep_run: {run} has no {name} (it was made before runs recorded their host)")
    log = [json.loads(l) for l in (run / "log.jsonl").read_text().splitlines()]
    kept = [r for r in log
            if "val_loss" in r or "dropout" in r or r["step"] % every == 0 or r["step"] == 1 or r is log[-1]]
    (dest / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    for f in sorted(run.glob("*.final.*")) + sorted(run.glob("*.averaged.*")): shutil.copyfile(f, dest / f.name)
    print(f"kept {run} -> {dest}: {len(kept)} of {len(log)} log records, {sorted(p.name for p in dest.iterdir())}")

if __name__ == "__main__":
    if len(sys.argv) != 3: sys.exit(__doc__)
    keep(Path(sys.argv[1]), Path(sys.argv[2]))

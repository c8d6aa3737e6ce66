#!/usr/bin/env python3
"""The wmt14-base preset's speed on one GPU, measured on Multi30k in the WMT14 file layout (chapter 15's "Measured" section).
WMT14 itself was not available, so the data are Multi30k's English→German pairs under WMT14's file names, with a vocabulary
sized for them. The steps, from the repository root (ANNOTATED_TX_DATA must point at a directory holding multi30k/):

    python3 tools/wmt14_gpu.py prepare DATA RUN [--vocab-size 8000]   # DATA/wmt14/ from Multi30k; RUN/tokenizer.model (CPU)
    annotated-tx train --preset wmt14-base --data-dir DATA --out RUN --no-download --no-progress \\
        --set vocab_size=8000 --set train.max_updates=400 --set eval_sentences=100 --set compare_greedy=false   # on the GPU
    python3 tools/wmt14_gpu.py matmul                                 # on the GPU: an 8192³ bf16 product's rate, for scale
    python3 tools/wmt14_gpu.py profile RUN                            # on the GPU: batching, update and kernel time of an update
    python3 tools/wmt14_gpu.py keep RUN DEST --first-timed 101 ...    # the kept record (CPU; see --help)

`keep` replays the run's stream of micro-batches on the CPU (the same tokenizer, the same seeded sampler) to learn what the
log does not hold: every micro-batch's padded shape, hence the update's model FLOPs (`benchmarks.train_flops`, padding
included). It checks that the replay's target tokens equal the log's at every update, so the shapes are the run's.
"""
import argparse, json, statistics, sys, time
from pathlib import Path

def prepare(data: Path, run: Path, vocab_size: int) -> None:
    "DATA/wmt14/{train,newstest2013,newstest2014}.{en,de} from Multi30k's train, val and test_2016_flickr; RUN/tokenizer.model."
    from annotated_tx.data import load_multi30k
    from annotated_tx.cli import main
    d = data / "wmt14"; d.mkdir(parents=True, exist_ok=False)
    for split, m30k in (("train", "train"), ("newstest2013", "val"), ("newstest2014", "test_2016_flickr")):
        pairs = load_multi30k(m30k, "en", "de", download=False)
        for k, lang in enumerate(("en", "de")): (d / f"{split}.{lang}").write_text("".join(p[k] + "\n" for p in pairs))
        print(f"{d}/{split}.en|de: {len(pairs)} pairs (Multi30k {m30k})")
    if main(["vocab", "--corpus", "wmt14", "--data-dir", str(data), "--no-download", "--vocab-size", str(vocab_size), "--out", str(run)]):
        sys.exit("vocab failed")

def matmul(n: int = 8192, reps: int = 10) -> None:
    "The rate of an n×n×n bf16 product on the GPU (mean of `reps` after 3 warm-ups), random data."
    import torch
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3): a @ b
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(reps): a @ b
    torch.cuda.synchronize(); s = (time.perf_counter() - t) / reps
    print(json.dumps({"matmul_bf16_tflops": round(2 * n ** 3 / s / 1e12, 1), "n": n, "reps": reps}))

def profile(run: Path, warm: int = 40, timed: int = 30, profiled: int = 10) -> None:
    "Where an update's time goes: the run's model and micro-batches through the trainer's `update_step`, the batching timed apart, the GPU's kernel time profiled."
    import torch
    from itertools import islice
    from torch.profiler import profile as torch_profile, ProfilerActivity
    from annotated_tx.model import Transformer
    from annotated_tx.optimization import make_optimizer, rate
    from annotated_tx.trainer import update_step
    recipe, c, cfg, batches, accum = _stream(run)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.manual_seed(cfg.seed); model = Transformer(c).to(dev); opt = make_optimizer(model, cfg.betas, cfg.adam_eps)
    stream, step, epoch = iter(batches(0)), 0, 0
    def group():                                         # as the trainer groups them: epoch after epoch
        nonlocal stream, epoch
        g = list(islice(stream, accum))
        if not g: epoch += 1; stream = iter(batches(epoch)); g = list(islice(stream, accum))
        return g
    def one():
        nonlocal step
        t0 = time.perf_counter(); g = group(); t1 = time.perf_counter()
        update_step(model, opt, g, cfg=cfg, lr=rate(step + 1, c.d_model, cfg.warmup), device=dev); sync(); step += 1
        return t1 - t0, time.perf_counter() - t1, len(g)
    for _ in range(warm): one()
    rows = [one() for _ in range(timed)]
    full = [r for r in rows if r[2] == accum]
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with torch_profile(activities=acts) as prof:
        t0 = time.perf_counter()
        for _ in range(profiled): one()
        wall = time.perf_counter() - t0
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.time_range.elapsed_us() for e in kernels) / 1e6               # µs -> s; one stream: kernels do not overlap
    print(json.dumps({"device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu", "torch": torch.__version__,
                      "warm_updates": warm, "timed_updates": len(full),
                      "batching_s": statistics.mean(r[0] for r in full), "update_step_s": statistics.mean(r[1] for r in full),
                      "profiled_updates": profiled, "profiled_wall_s_per_update": wall / profiled,
                      "gpu_kernel_s_per_update": busy / profiled, "kernels_per_update": len(kernels) / profiled}))

def _stream(run: Path):
    "The run's recipe, model configuration, training settings, batches (as `fit_recipe` makes them) and micro-batches per update."
    from annotated_tx.recipes import Recipe, recipe_pairs, micro_batch
    from annotated_tx.tokenizer import Tokenizer, encode_pairs, filter_pairs
    from annotated_tx.batching import Batches
    from annotated_tx.trainer import TrainConfig
    recipe = Recipe.from_dict(json.loads((run / "recipe.json").read_text()))
    tok = Tokenizer.load(run / "tokenizer.model")
    c = recipe.model_config(tok.vocab_size)
    train_pairs, _, _ = recipe_pairs(recipe, download=False)
    ids, _ = filter_pairs(encode_pairs(tok, train_pairs), c.max_len - 1, "train")
    cfg = TrainConfig.from_dict(recipe.train)
    max_tokens, accum = micro_batch(recipe, 1)
    return recipe, c, cfg, Batches.from_pairs(ids, max_tokens, shuffle=True, seed=cfg.seed), accum

def replay(run: Path, updates: int) -> list[dict]:
    "The first `updates` updates of the run's training stream, as the trainer groups it: per update its micro-batches' shapes and FLOPs."
    from itertools import islice
    from annotated_tx.benchmarks import train_flops
    recipe, c, cfg, batches, accum = _stream(run)
    out, epoch = [], 0
    while len(out) < updates:
        stream = batches(epoch)
        while len(out) < updates:
            group = list(islice(stream, accum))
            if not group: break
            out.append({"micro_batches": len(group), "tgt_tokens": sum(b.n_tgt_tokens for b in group),
                        "src_padded": sum(b.src.numel() for b in group), "tgt_padded": sum(b.tgt_in.numel() for b in group),
                        "shapes": [[b.src.size(0), b.src.size(1), b.tgt_in.size(1)] for b in group],
                        "flops": sum(train_flops(c, b) for b in group)})
        epoch += 1
    return out

def keep(run: Path, dest: Path, first_timed: int, extra: dict) -> None:
    "Write DEST: the run's recipe, host, results and full log; updates.jsonl (each update's replayed shapes and FLOPs beside its time); measurement.json."
    import shutil
    log = [json.loads(l) for l in (run / "log.jsonl").read_text().splitlines()]
    steps = [r for r in log if "val_loss" not in r]
    shapes = replay(run, len(steps))
    bad = [r["step"] for r, s in zip(steps, shapes) if r["tokens"] != s["tgt_tokens"]]
    if bad: sys.exit(f"the replay's target tokens differ from the log's at updates {bad[:10]}: not the run's batches")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("recipe.json", "host.json", "results.json"): shutil.copyfile(run / name, dest / name)
    (dest / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    per_update = [{"step": r["step"], "seconds": round(r["seconds"] - (steps[i - 1]["seconds"] if i else 0.0), 6), **s}
                  for i, (r, s) in enumerate(zip(steps, shapes))]
    timed = [u for u in per_update if u["step"] >= first_timed and u["micro_batches"] == max(x["micro_batches"] for x in per_update)]
    rec = {**extra, "first_timed_update": first_timed,
           "timed": {"updates": len(timed), "seconds": sum(u["seconds"] for u in timed), "tgt_tokens": sum(u["tgt_tokens"] for u in timed),
                     "src_padded": sum(u["src_padded"] for u in timed), "tgt_padded": sum(u["tgt_padded"] for u in timed),
                     "flops": sum(u["flops"] for u in timed), "median_seconds": statistics.median(u["seconds"] for u in timed)},
           "replay_matches_log": True}
    (dest / "measurement.json").write_text(json.dumps(rec, indent=1))
    (dest / "updates.jsonl").write_text("".join(json.dumps(u) + "\n" for u in per_update))
    t = rec["timed"]
    print(f"kept {run} -> {dest}: {t['updates']} timed updates, {t['seconds'] / t['updates']:.4f} s each, "
          f"{t['tgt_tokens'] / t['seconds']:,.0f} target tok/s, {t['flops'] / t['seconds'] / 1e12:.1f} TFLOP/s")

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare"); p.add_argument("data", type=Path); p.add_argument("run", type=Path); p.add_argument("--vocab-size", type=int, default=8000)
    sub.add_parser("matmul")
    p = sub.add_parser("profile"); p.add_argument("run", type=Path); p.add_argument("--warm", type=int, default=40); p.add_argument("--timed", type=int, default=30)
    p = sub.add_parser("keep"); p.add_argument("run", type=Path); p.add_argument("dest", type=Path)
    p.add_argument("--first-timed", type=int, default=101, help="the first update counted as steady state (default: 101)")
    p.add_argument("--extra", type=Path, default=None, help="a JSON file whose keys go into measurement.json (host, command, cells)")
    a = ap.parse_args()
    if a.cmd == "prepare": prepare(a.data, a.run, a.vocab_size)
    elif a.cmd == "matmul": matmul()
    elif a.cmd == "profile": profile(a.run, a.warm, a.timed)
    else: keep(a.run, a.dest, a.first_timed, json.loads(a.extra.read_text()) if a.extra else {})

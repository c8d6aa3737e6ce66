"Before (c1adfe5) vs after (this tree): greedy and beam-4 decoding of the same weights and sources, interleaved, medians."
import os, sys, time, statistics, torch
sys.path.insert(0, os.environ.get("BASELINE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_baseline")))
import annotated_tx_before.decoding as od, annotated_tx_before.model as om
from annotated_tx.model import Transformer, get_config
from annotated_tx.decoding import DecodeConfig, greedy_decode, beam_search
from annotated_tx.benchmarks import bench_sources
threads, rounds = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads); torch.manual_seed(0)
m = Transformer(get_config("small")).eval()
o = om.Transformer(om.get_config("small")).eval(); o.load_state_dict(m.state_dict())
src = bench_sources(40, 15, 35, 8000)
runs = {("greedy", "before"): lambda: od.greedy_decode(o, src, 0, 40, min_len=40),
        ("greedy", "after"): lambda: greedy_decode(m, src, DecodeConfig(search="greedy", max_len_a=0, max_len_b=40, min_len=40)),
        ("beam-4", "before"): lambda: od.beam_search(o, src, 4, 0.6, 0, 40, min_len=40),
        ("beam-4", "after"): lambda: beam_search(m, src, DecodeConfig(beam=4, alpha=0.6, max_len_a=0, max_len_b=40, min_len=40))}
with torch.no_grad():
    for f in runs.values(): f()
    t = {k: [] for k in runs}
    for r in range(rounds):
        for k in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            s = time.perf_counter(); runs[k](); t[k].append(time.perf_counter() - s)
for search in ("greedy", "beam-4"):
    b, a = t[search, "before"], t[search, "after"]
    ratio = statistics.median(x / y for x, y in zip(b, a))
    print(f"{threads} thread(s), {search}: before {statistics.median(b):.3f} s, after {statistics.median(a):.3f} s per 40 sentences x 40 tokens; "
          f"speed after/before {ratio:.3f}x (median of {rounds} interleaved rounds, range {min(x / y for x, y in zip(b, a)):.2f}-{max(x / y for x, y in zip(b, a)):.2f})")

"Before/after training-step throughput: the model of c1adfe5 vs the working tree's, same weights, same batches, interleaved."
import os, sys, time, statistics, torch
import torch.nn.functional as F
sys.path.insert(0, os.environ.get("BASELINE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_baseline")))
import annotated_tx_before.model as before
from annotated_tx.model import Transformer, get_config
from annotated_tx.benchmarks import synthetic_batches
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
torch.set_num_threads(threads)
torch.manual_seed(0)
c = get_config("small", max_len=64)
new = Transformer(c).train()
old = before.Transformer(before.get_config("small", max_len=64)).train()
old.load_state_dict(new.state_dict())
batches = synthetic_batches(4, 40, 15, 35, c.src_vocab_size, 0)
models = {"before": old, "after": new}
opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4) for k, m in models.items()}
def run(name, n, i0):
    m, opt, toks = models[name], opts[name], 0
    t = time.perf_counter()
    for i in range(n):
        b = batches[(i0 + i) % 4]
        logits = m(b.src, b.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), b.tgt_out.flatten(), ignore_index=0, label_smoothing=0.1)
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        toks += b.n_tgt_tokens
    return toks / (time.perf_counter() - t)
for k in models: run(k, 2, 0)
tps = {k: [] for k in models}; ratio = []
for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 10):
    order = list(models) if r % 2 == 0 else list(models)[::-1]
    for k in order: tps[k].append(run(k, 3, 3 * r))
    ratio.append(tps["after"][-1] / tps["before"][-1])
print(f"training step, small, 40 pairs of 15-35 tokens, float32, plain Adam, {threads} thread(s), {len(ratio)} interleaved rounds of 3 steps")
for k in models: print(f"  {k:7} median {statistics.median(tps[k]):7.0f} target tok/s (best {max(tps[k]):.0f})")
print(f"  after/before: median of per-round ratios {statistics.median(ratio):.3f} (range {min(ratio):.3f}-{max(ratio):.3f})")

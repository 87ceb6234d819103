"""What a PyTorch program does with the GPU, for test/gpu/check.py to run with and without
the shim: the output (checksums and results, never timings) must be the same.
  copies  pageable/pinned x blocking/non_blocking round trips, then .cpu() and .item()
  model   a small CNN's inference loop: each frame a pinned batch goes up
          non_blocking, the forward pass runs, the classes come back with .cpu()
  state   whether importing torch under the shim initialised CUDA (it must not)
  triton  a Triton kernel (Triton launches through the driver itself), five launches
  loader  a DataLoader with 2 worker processes (forked after CUDA is up) and pin_memory's
          thread: each batch pinned, uploaded non_blocking, run through a small model
  graphs  a CUDA graph captured with a pinned upload inside it (the shim asks the driver
          about the host pointer while the stream captures), then replayed five times"""
import sys

import torch


def copies():
    x = torch.arange(1 << 18, dtype=torch.float32)
    for pinned in (False, True):
        for blocking in (True, False):
            source = x.pin_memory() if pinned else x
            on_gpu = source.to("cuda", non_blocking=not blocking)
            back = (on_gpu * 2).to("cpu", non_blocking=not blocking)
            torch.cuda.synchronize()
            print("round trip pinned=%d blocking=%d: %.1f" % (pinned, blocking, back.sum().item() / 1e6))
    y = torch.full((1024,), 3.0, device="cuda")
    print("cpu: %.1f" % y.cpu().sum())
    print("item: %.1f" % (y * 2).sum().item())


def model(frames):
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)).cuda().eval()
    batch = torch.empty((8, 3, 64, 64)).pin_memory()
    results = []
    with torch.inference_mode():
        for frame in range(frames):
            batch.copy_(torch.linspace(0, 1, batch.numel()).reshape(batch.shape) * (frame + 1))
            scores = net(batch.to("cuda", non_blocking=True))
            results.append(scores.argmax(dim=1).cpu().tolist())
    print("model: %d frames, classes %s" % (frames, results[-1]))


def state():
    print("initialised after import: %s" % torch.cuda.is_initialized())
    torch.zeros(1, device="cuda")
    print("initialised after use: %s" % torch.cuda.is_initialized())


def triton_launches():
    import triton
    import triton.language as tl

    @triton.jit
    def triton_add(x, y, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)

    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    for _ in range(5):
        triton_add[(4,)](x, x, out, x.numel(), BLOCK=1024)
    print("triton: %.1f" % out.sum().item())


class Frames(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.linspace(0, 1, 3 * 32 * 32).reshape(3, 32, 32) * (index + 1)


def loader():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(8, 4)).cuda().eval()
    torch.zeros(1, device="cuda")        # CUDA is up before the workers fork, as in most programs
    batches = torch.utils.data.DataLoader(Frames(), batch_size=8, num_workers=2, pin_memory=True,
                                          multiprocessing_context="fork")
    classes = []
    with torch.inference_mode():
        for batch in batches:
            classes += net(batch.to("cuda", non_blocking=True)).argmax(dim=1).cpu().tolist()
    print("loader: %d batches, classes %s" % (len(classes) // 8, classes[:16]))


def graphs():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).cuda().eval()
    pinned = torch.empty((16, 64)).pin_memory()
    static_in = torch.zeros((16, 64), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):                       # warm-up, as PyTorch asks before a capture
            static_in.copy_(pinned, non_blocking=True)
            net(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        static_in.copy_(pinned, non_blocking=True)
        static_out = net(static_in)
    results = []
    for frame in range(5):
        pinned.copy_(torch.linspace(-1, 1, pinned.numel()).reshape(pinned.shape) * (frame + 1))
        graph.replay()
        results.append(round(static_out.sum().item(), 3))
    print("graphs: %s" % results)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "copies":
        copies()
    elif what == "model":
        model(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    elif what == "loader":
        loader()
    elif what == "graphs":
        graphs()
    elif what == "triton":
        triton_launches()
    else:
        state()

"""The workloads of gpu_check_unseen.py: every set's inputs, made once per process, and what each
eager case and each graph's body launches (torch ops, cuDNN, cuBLAS, Triton kernels)."""

import time


class Work:
    """The workloads, made once per process; `workload_set` ("1" to "5", gpu_check_unseen's ``SETS``)
    adds that set's inputs."""

    def __init__(self, workload_set="1"):
        import torch
        import torch.nn.functional as F

        self.torch, self.F = torch, F
        dev = "cuda"
        torch.manual_seed(0)
        self.sm = torch.randn(4096, 4096, device=dev)
        self.ln = torch.randn(8192, 4096, device=dev, dtype=torch.float16)
        self.ln_w = torch.randn(4096, device=dev, dtype=torch.float16)
        self.ln_b = torch.randn(4096, device=dev, dtype=torch.float16)
        self.q, self.k, self.v = (torch.randn(8, 16, 1024, 64, device=dev, dtype=torch.float16) for _ in range(3))
        self.cx = torch.randn(32, 64, 56, 56, device=dev, dtype=torch.float16).to(memory_format=torch.channels_last)
        self.cw = torch.randn(64, 64, 3, 3, device=dev, dtype=torch.float16).to(memory_format=torch.channels_last)
        self.bf = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        self.sk_a = torch.randn(16, 8192, device=dev)
        self.sk_b = torch.randn(8192, 8192, device=dev)
        self.sort_in = torch.randn(4 << 20, device=dev)
        self.cs_in = torch.randn(16 << 20, device=dev)
        self.idx = torch.randint(0, 65536, (4 << 20,), device=dev)
        self.src = torch.randn(4 << 20, device=dev)
        self.acc = torch.zeros(65536, device=dev)
        self.one = torch.zeros(1, device=dev)
        self.logits = torch.randn(4096, 32000, device=dev)
        self.target = torch.randint(0, 32000, (4096,), device=dev)
        self.w1 = torch.randn(4096, 16384, device=dev, dtype=torch.float16) * 0.01
        self.w2 = torch.randn(16384, 4096, device=dev, dtype=torch.float16) * 0.01
        self.xm = torch.randn(2048, 4096, device=dev, dtype=torch.float16)
        self.c4 = torch.randn(4 << 20, device=dev)
        self.copy_src = torch.randn(16 << 20, device=dev)
        self.copy_dst = torch.empty_like(self.copy_src)
        self.triton_add = triton_add()
        self.tr_x = torch.randn(16 << 20, device=dev)
        self.tr_y = torch.randn(16 << 20, device=dev)
        self.tr_out = torch.empty_like(self.tr_x)
        if workload_set == "2":
            self.make_set2()
        if workload_set == "3":
            self.make_set3()
        if workload_set == "4":
            self.make_set4()
        if workload_set == "5":
            self.make_set5()
        torch.cuda.synchronize()

    def make_set2(self):
        """The second set's inputs (2026-12-03)."""
        torch, dev = self.torch, "cuda"
        self.fft_in = torch.randn(4096, 4096, device=dev, dtype=torch.complex64)
        self.solve_a = torch.randn(2048, 2048, device=dev) + 2048 * torch.eye(2048, device=dev)
        self.solve_b = torch.randn(2048, 64, device=dev)
        self.emb_w = torch.randn(65536, 512, device=dev)
        self.emb_idx = torch.randint(0, 65536, (262144,), device=dev)
        self.sum_in = torch.randn(64 << 20, device=dev)
        self.st_a = torch.randn(4 << 20, device=dev)
        self.st_b = torch.randn(4 << 20, device=dev)
        self.side = (torch.cuda.Stream(), torch.cuda.Stream())
        self.small = torch.zeros(65536, device=dev)
        try:
            a = torch.randn(4096, 4096, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(4096, 4096, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt asks
            one = torch.ones((), device=dev)
            self.fp8 = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            self.fp8()
        except Exception as e:  # noqa: BLE001  (no fp8 matmul in this torch: the case is a row with the error)
            self.fp8 = None
            self.fp8_error = str(e)[:200]
        self.cx1 = torch.randn(8192, 4096, device=dev)
        self.cw1 = torch.randn(4096, device=dev)

        def fused(x, w):
            return torch.nn.functional.gelu(x * w + 1.0).sum(dim=1)

        self.compiled = torch.compile(fused)
        self.compiled_graph = torch.compile(fused, mode="reduce-overhead")

    def make_set3(self):
        """The third set's inputs (2026-12-03)."""
        torch, dev = self.torch, "cuda"
        self.bmm_a = torch.randn(64, 512, 512, device=dev, dtype=torch.float16)
        self.bmm_b = torch.randn(64, 512, 512, device=dev, dtype=torch.float16)
        self.topk_in = torch.randn(16 << 20, device=dev)
        self.uniq_in = torch.randint(0, 4096, (1 << 20,), device=dev)
        self.rand_out = torch.empty(16 << 20, device=dev)
        self.m64 = torch.randn(64, 64, device=dev)
        self.bf16k = torch.randn(16384, 16384, device=dev, dtype=torch.bfloat16)
        self.mid = torch.randn(256 << 10, device=dev)
        self.gap_x = torch.randn(4 << 20, device=dev)
        self.h2d_src = torch.randn(16 << 20).pin_memory()
        self.h2d_dst = torch.empty(16 << 20, device=dev)
        self.bn_x = torch.randn(64, 128, 56, 56, device=dev, dtype=torch.float16)
        self.bn = torch.nn.BatchNorm2d(128, device=dev, dtype=torch.float16).train()
        self.params = [torch.nn.Parameter(torch.randn(n, device=dev)) for n in (4 << 20, 1 << 20, 4096, 3 << 20)]
        for q in self.params:
            q.grad = torch.randn_like(q) * 1e-3
        self.adamw = torch.optim.AdamW(self.params, lr=1e-4, fused=True, capturable=True)
        self.adamw.step()  # the optimizer's state, made outside every region
        self.cat_in = [torch.randn(1 << 20, device=dev) for _ in range(8)]
        self.interp_in = torch.randn(16, 64, 128, 128, device=dev, dtype=torch.float16)
        self.side3 = torch.cuda.Stream()
        self.add1k = torch.zeros(4096, device=dev)

    def make_set4(self):
        """The fourth set's inputs (2026-12-03)."""
        torch, dev = self.torch, "cuda"
        bf, f16 = torch.bfloat16, torch.float16
        self.m512 = torch.randn(512, 512, device=dev)
        self.odd_a = torch.randn(4095, 4097, device=dev, dtype=bf)
        self.odd_b = torch.randn(4097, 4093, device=dev, dtype=bf)
        self.i8_a = torch.randint(-8, 8, (4096, 4096), device=dev, dtype=torch.int8)
        self.i8_b = torch.randint(-8, 8, (4096, 4096), device=dev, dtype=torch.int8)
        self.g64 = torch.randn(64 << 20, device=dev, dtype=bf)
        self.sw_a = torch.randn(16 << 20, device=dev, dtype=bf)
        self.sw_b = torch.randn(16 << 20, device=dev, dtype=bf)
        self.rms_x = torch.randn(8192, 4096, device=dev, dtype=bf)
        self.rms_w = torch.randn(4096, device=dev, dtype=bf)
        self.am = torch.randn(8192, 8192, device=dev)
        self.fill_out = torch.empty(256 << 20, device=dev)
        self.half_src = torch.randn(64 << 20, device=dev)
        self.gs_x = torch.randn(16, 64, 128, 128, device=dev)
        self.gs_grid = torch.rand(16, 128, 128, 2, device=dev) * 2 - 1
        self.nz_in = torch.rand(16 << 20, device=dev) > 0.5
        self.bw_x = torch.randn(4096, 4096, device=dev, dtype=f16, requires_grad=True)
        self.bw_w = torch.randn(4096, 4096, device=dev, dtype=f16, requires_grad=True)
        self.bw_g = torch.randn(4096, 4096, device=dev, dtype=f16)
        self.cb_x = torch.randn(32, 64, 56, 56, device=dev, dtype=f16, requires_grad=True)
        self.cb_conv = torch.nn.Conv2d(64, 64, 3, padding=1, device=dev, dtype=f16)
        self.cb_g = torch.randn(32, 64, 56, 56, device=dev, dtype=f16)
        self.eb = torch.nn.Embedding(65536, 512, device=dev)
        self.eb_idx = torch.randint(0, 65536, (262144,), device=dev)
        self.eb_g = torch.randn(262144, 512, device=dev)
        self.lstm = torch.nn.LSTM(1024, 1024, num_layers=2, device=dev, dtype=f16)
        self.lstm_x = torch.randn(64, 32, 1024, device=dev, dtype=f16)
        self.fa_q, self.fa_k, self.fa_v = (torch.randn(4, 32, 4096, 128, device=dev, dtype=bf) for _ in range(3))
        self.tr_layers = [torch.nn.Linear(2048, 2048, device=dev, dtype=bf) for _ in range(4)]
        self.tr_in = torch.randn(1024, 2048, device=dev, dtype=bf)

    def make_set5(self):
        """The fifth set's inputs (2026-12-04)."""
        torch, dev = self.torch, "cuda"
        bf, f16 = torch.bfloat16, torch.float16
        self.ca_q, self.ca_k, self.ca_v = (torch.randn(4, 32, 2048, 128, device=dev, dtype=bf) for _ in range(3))
        self.ea_q, self.ea_k, self.ea_v = (torch.randn(8, 16, 1024, 64, device=dev) for _ in range(3))
        self.tf_a = torch.randn(4096, 4096, device=dev)
        self.am_x = torch.randn(4096, 4096, device=dev, dtype=f16)
        self.am_w = torch.randn(4096, 4096, device=dev, dtype=f16) * 0.01
        self.am_b = torch.randn(4096, device=dev, dtype=f16)
        self.gn_x = torch.randn(32, 256, 56, 56, device=dev)
        self.c3_x = torch.randn(8, 32, 16, 56, 56, device=dev, dtype=f16)
        self.c3_w = torch.randn(32, 32, 3, 3, 3, device=dev, dtype=f16)
        self.mp_x = torch.randn(64, 128, 112, 112, device=dev, dtype=f16)
        self.tp_x = torch.randn(8192, 8192, device=dev)
        self.ga_x = torch.randn(8192, 4096, device=dev)
        self.ga_i = torch.randint(0, 4096, (8192, 4096), device=dev)
        self.hi_x = torch.randn(16 << 20, device=dev)
        self.es_a = torch.randn(32, 16, 512, 64, device=dev, dtype=f16)
        self.es_b = torch.randn(32, 16, 512, 64, device=dev, dtype=f16)
        self.mha = torch.nn.MultiheadAttention(1024, 16, batch_first=True, device=dev, dtype=f16)
        self.mha_x = torch.randn(8, 512, 1024, device=dev, dtype=f16)
        self.th_x = [torch.randn(4 << 20, device=dev) for _ in range(2)]
        self.th_streams = [torch.cuda.Stream() for _ in range(2)]
        self.triton_auto = triton_autotuned()
        self.g20_x = torch.randn(1 << 20, device=dev)

    def two_threads(self):
        """Two Python threads, each launching ten kernels on its own stream, joined in the region;
        the current stream then waits for both."""
        import threading

        torch = self.torch
        cur = torch.cuda.current_stream()

        def work(i):
            s = self.th_streams[i]
            s.wait_stream(cur)
            with torch.cuda.stream(s):
                for _ in range(10):
                    self.th_x[i].mul_(1.0001)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for s in self.th_streams:
            cur.wait_stream(s)

    def eager5(self, base):
        """The fifth set's eager cases."""
        t, F = self.torch, self.F
        if base == "cudnnattn":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(self.ca_q, self.ca_k, self.ca_v, is_causal=True)
        if base == "effattn":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                return F.scaled_dot_product_attention(self.ea_q, self.ea_k, self.ea_v)
        if base == "tf32mm":
            before = t.backends.cuda.matmul.allow_tf32
            t.backends.cuda.matmul.allow_tf32 = True
            try:
                return self.tf_a @ self.tf_a
            finally:
                t.backends.cuda.matmul.allow_tf32 = before
        if base == "addmmrelu":
            return t._addmm_activation(self.am_b, self.am_x, self.am_w)
        if base == "groupnorm":
            return F.group_norm(self.gn_x, 32)
        if base == "conv3d":
            return F.conv3d(self.c3_x, self.c3_w, padding=1)
        if base == "maxpool":
            return F.max_pool2d(self.mp_x, 3, 2)
        if base == "transpose":
            return self.tp_x.t().contiguous()
        if base == "gather":
            return t.gather(self.ga_x, 1, self.ga_i)
        if base == "histc":
            return t.histc(self.hi_x, bins=1000, min=-4.0, max=4.0)
        if base == "einsum":
            return t.einsum("bhqd,bhkd->bhqk", self.es_a, self.es_b)
        if base == "tritonauto":
            if self.triton_auto is None:
                raise RuntimeError("no triton")
            return self.triton_auto(self.tr_x, self.tr_y, self.tr_out)
        if base == "mha":
            with t.no_grad():
                return self.mha(self.mha_x, self.mha_x, self.mha_x, need_weights=False)
        if base == "threads2":
            return self.two_threads()
        raise ValueError(base)

    def train_step(self):
        """Forward, backward and a plain SGD update of four bf16 linear layers (a graph's body)."""
        h = self.tr_in
        for layer in self.tr_layers:
            h = self.F.gelu(layer(h))
        h.float().pow(2).mean().backward()
        with self.torch.no_grad():
            for layer in self.tr_layers:
                for q in layer.parameters():
                    q.add_(q.grad, alpha=-1e-4)

    def mlp(self):
        h = self.F.gelu(self.xm @ self.w1)
        return h @ self.w2

    def chain10(self):
        z = self.c4
        for _ in range(5):
            z = z * 1.0001 + 0.5
        return z

    def tiny200(self):
        for _ in range(200):
            self.one.add_(1.0)

    def copy_chain(self):
        self.copy_dst.copy_(self.copy_src)
        self.copy_dst.mul_(1.0001)
        self.copy_dst.add_(0.5)

    def eager(self, name):
        t, F = self.torch, self.F
        base = name[:-5] if name.endswith("_warm") else name
        if base == "softmax":
            return t.softmax(self.sm, -1)
        if base == "layernorm":
            return F.layer_norm(self.ln, (4096,), self.ln_w, self.ln_b)
        if base == "sdpa":
            return F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True)
        if base == "conv":
            return F.conv2d(self.cx, self.cw, padding=1)
        if base == "bf16mm8192":
            return self.bf @ self.bf
        if base == "skinny":
            return self.sk_a @ self.sk_b
        if base == "sort":
            return t.sort(self.sort_in)
        if base == "cumsum":
            return t.cumsum(self.cs_in, 0)
        if base == "scatter":
            return self.acc.index_add_(0, self.idx, self.src)
        if base == "tiny":
            return self.one.add_(1.0)
        if base == "xent":
            return F.cross_entropy(self.logits, self.target)
        if base == "mlp":
            return self.mlp()
        if base == "chain10":
            return self.chain10()
        if base == "triton":
            return self.triton_add(self.tr_x, self.tr_y, self.tr_out)
        return self.eager2(base)

    def eager2(self, base):
        """The second set's eager cases."""
        t = self.torch
        if base == "fft2":
            return t.fft.fft2(self.fft_in)
        if base == "solve":
            return t.linalg.solve(self.solve_a, self.solve_b)
        if base == "fp8mm":
            if self.fp8 is None:
                raise RuntimeError(self.fp8_error)
            return self.fp8()
        if base == "embed":
            return self.F.embedding(self.emb_idx, self.emb_w)
        if base == "sum64m":
            return self.sum_in.sum()
        if base == "streams2":
            # Two side streams at once, each a chain of five kernels, joined back to the current one.
            cur = t.cuda.current_stream()
            outs = []
            for s, x in zip(self.side, (self.st_a, self.st_b)):
                s.wait_stream(cur)
                with t.cuda.stream(s):
                    z = x
                    for _ in range(5):
                        z = z * 1.0001
                    outs.append(z)
            for s in self.side:
                cur.wait_stream(s)
            return outs
        if base == "item":
            return (self.st_a * 2.0).sum().item()
        if base == "many500":
            for _ in range(500):
                self.small.add_(1.0)
            return self.small
        if base == "compiled":
            return self.compiled(self.cx1, self.cw1)
        return self.eager3(base)

    def eager3(self, base):
        """The third set's eager cases."""
        t, F = self.torch, self.F
        if base == "bmm":
            return t.bmm(self.bmm_a, self.bmm_b)
        if base == "topk":
            return t.topk(self.topk_in, 100)
        if base == "unique":
            return t.unique(self.uniq_in)  # a host synchronization for the output's size
        if base == "randn":
            return self.rand_out.normal_()
        if base == "mm64":
            return self.m64 @ self.m64
        if base == "bf16mm16384":
            return self.bf16k @ self.bf16k
        if base == "many1100":
            for _ in range(1100):
                self.mid.mul_(1.0001)
            return self.mid
        if base == "sleepgap":
            # Two kernels 2 ms apart on the host: the region's GPU time is the two kernels.
            self.gap_x.mul_(1.0001)
            t.cuda.synchronize()
            time.sleep(0.002)
            return self.gap_x.add_(0.5)
        if base == "h2d":
            # A 64 MB copy from pinned host memory, then a kernel on it: ncu times the kernel.
            self.h2d_dst.copy_(self.h2d_src, non_blocking=True)
            return self.h2d_dst.mul_(2.0)
        if base == "batchnorm":
            return self.bn(self.bn_x)
        if base == "adamw":
            return self.adamw.step()
        if base == "cat":
            return t.cat(self.cat_in)
        if base == "interp":
            return F.interpolate(self.interp_in, scale_factor=4, mode="bilinear", align_corners=False)
        return self.eager4(base)

    def eager4(self, base):
        """The fourth set's eager cases. The backward ones run their forward too (autograd needs
        it) and reset the gradients first (host work only), so every run does the same kernels."""
        t, F = self.torch, self.F
        if base == "mm512":
            return self.m512 @ self.m512
        if base == "bf16odd":
            return self.odd_a @ self.odd_b
        if base == "intmm":
            return t._int_mm(self.i8_a, self.i8_b)
        if base == "gelubf16":
            return F.gelu(self.g64)
        if base == "swiglu":
            return F.silu(self.sw_a) * self.sw_b
        if base == "rmsnorm":
            return F.rms_norm(self.rms_x, (4096,), self.rms_w)
        if base == "argmax":
            return self.am.argmax(dim=1)
        if base == "fill1g":
            return self.fill_out.fill_(1.0)
        if base == "tohalf":
            return self.half_src.half()
        if base == "gridsample":
            return F.grid_sample(self.gs_x, self.gs_grid, align_corners=False)
        if base == "nonzero":
            return t.nonzero(self.nz_in)  # a host synchronization for the output's size
        if base == "mmbwd":
            self.bw_x.grad = self.bw_w.grad = None
            return (self.bw_x @ self.bw_w).backward(self.bw_g)
        if base == "convbwd":
            self.cb_x.grad = self.cb_conv.weight.grad = self.cb_conv.bias.grad = None
            return self.cb_conv(self.cb_x).backward(self.cb_g)
        if base == "embbwd":
            self.eb.weight.grad = None
            return self.eb(self.eb_idx).backward(self.eb_g)
        if base == "lstm":
            return self.lstm(self.lstm_x)
        if base == "flashbf16":
            return F.scaled_dot_product_attention(self.fa_q, self.fa_k, self.fa_v, is_causal=True)
        return self.eager5(base)

    def graph_body(self, name):
        if name.startswith("gmlp"):
            self.g_out = self.mlp()
        elif name.startswith("gcopy"):
            self.copy_chain()
        elif name.startswith("gtiny"):
            self.tiny200()
        elif name.startswith("gfft"):
            self.g_out = self.torch.fft.fft2(self.fft_in)
        elif name.startswith("gadamw"):
            self.adamw.step()
        elif name.startswith("g1000"):
            for _ in range(1000):
                self.add1k.add_(1.0)
        elif name.startswith(("g5x", "gside")):
            self.g_out = self.mlp()
        elif name.startswith("gtrain"):
            self.train_step()
        elif name.startswith("gflash"):
            self.g_out = self.F.scaled_dot_product_attention(self.fa_q, self.fa_k, self.fa_v, is_causal=True)
        elif name.startswith("glstm"):
            self.g_out = self.lstm(self.lstm_x)
        elif name.startswith("gattn"):
            self.g_out = self.F.scaled_dot_product_attention(self.ca_q, self.ca_k, self.ca_v, is_causal=True)
        elif name.startswith("gmha"):
            with self.torch.no_grad():
                self.g_out = self.mha(self.mha_x, self.mha_x, self.mha_x, need_weights=False)
        elif name.startswith("gtriton"):
            self.g_out = self.triton_auto(self.tr_x, self.tr_y, self.tr_out)
        elif name.startswith("g20x"):
            z = self.g20_x
            for _ in range(5):
                z = z * 1.0001 + 0.5
            self.g_out = z
        else:
            raise ValueError(name)

    def capture(self, name):
        from gpu_check_truth_cases import capture_graph  # imports torch: the GPU parts only

        return capture_graph(lambda: self.graph_body(name))


def triton_add():
    """A Triton kernel (x + y over 16M floats), or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001  (no Triton in this image)
        return None

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    def run(x, y, out):
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out

    return run


def triton_autotuned():
    """A Triton kernel (x + y over 16M floats) autotuned over four block sizes on its first call,
    or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001  (no Triton in this image)
        return None

    @triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in
                              ((256, 2), (1024, 4), (2048, 8), (4096, 8))], key=["n"])
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)

    def run(x, y, out):
        n = x.numel()
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out

    run.best_config = lambda: str(getattr(add_kernel, "best_config", None))
    return run

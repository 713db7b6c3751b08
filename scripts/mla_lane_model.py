# Lane-level model of one CTA of kernels/attn_mla.cu (bf16 path), for checking its fragment and swizzle
# arithmetic without a GPU: every shared-memory address, ldmatrix lane mapping, mma.m16n8k16 fragment and the
# row-max / row-sum exchange are written as the kernel writes them, with ldmatrix and mma semantics from the
# PTX ISA, and the chunk's normalised output and log2-sum-exp are compared with a float reference.
# Keep it in step with the kernel when its layout changes. Pure Python, no packages:
#   python3 scripts/mla_lane_model.py ROWS CTX FIRST_TILE END_TILE   (e.g. 64 130 0 3; exit 1 on a mismatch)
import math, random, struct, sys

TILE, D, DV, ROW_BYTES = 64, 576, 512, 1152
WARPS = 8

def bf16(x):
    b = struct.unpack('<I', struct.pack('<f', x))[0]
    b = (b + 0x7fff + ((b >> 16) & 1)) >> 16
    return struct.unpack('<f', struct.pack('<I', (b & 0xffff) << 16))[0]

def swz(r, c, rb): return r * rb + ((c ^ (r & 7)) << 4)

class Smem:
    def __init__(self, n): self.v = {}  # byte offset (even) -> float
    def put(self, off, x): self.v[off] = x
    def get(self, off): return self.v.get(off, float('nan'))
    def row8(self, off): return [self.get(off + 2 * i) for i in range(8)]

def ldsm(sm, addrs, trans=False):
    # addrs[lane]; returns regs[lane][j] = (lo, hi)
    mats = [[sm.row8(addrs[8 * j + i]) for i in range(8)] for j in range(4)]
    out = []
    for l in range(32):
        regs = []
        for j in range(4):
            m = mats[j]
            if not trans: regs.append((m[l // 4][2 * (l % 4)], m[l // 4][2 * (l % 4) + 1]))
            else: regs.append((m[2 * (l % 4)][l // 4], m[2 * (l % 4) + 1][l // 4]))
        out.append(regs)
    return out

def mma(d, a, b0, b1):
    A = [[0.0] * 16 for _ in range(16)]; B = [[0.0] * 8 for _ in range(16)]
    for l in range(32):
        g, c = l // 4, l % 4
        for e in range(2):
            A[g][2 * c + e] = a[l][0][e]; A[g + 8][2 * c + e] = a[l][1][e]
            A[g][2 * c + 8 + e] = a[l][2][e]; A[g + 8][2 * c + 8 + e] = a[l][3][e]
            B[2 * c + e][g] = b0[l][e]; B[2 * c + 8 + e][g] = b1[l][e]
    for l in range(32):
        g, c = l // 4, l % 4
        for e in range(4):
            r = g + 8 * (e >> 1); n = 2 * c + (e & 1)
            d[l][e] += sum(A[r][k] * B[k][n] for k in range(16))

def run(ROWS, ctx, tb, te, seed):
    rnd = random.Random(seed)
    SMT = 2 if ROWS == 64 else 1; RG = ROWS // (16 * SMT); TG = WARPS // RG; STOK = TILE // TG; SNT = STOK // 8
    MT = ROWS // 16; ONT = 8
    q = [[bf16(rnd.gauss(0, 1)) for _ in range(D)] for _ in range(ROWS)]
    C = [[bf16(rnd.gauss(0, 1)) for _ in range(D)] for _ in range(ctx)]
    scale_log2 = 0.0721687836 * 1.4426950408889634
    qs, ts, ps = Smem(0), Smem(0), Smem(0)
    for i in range(ROWS * 72):
        r, cc = divmod(i, 72)
        for k in range(8): qs.put(swz(r, cc, ROW_BYTES) + 2 * k, q[r][cc * 8 + k])
    red = [float('nan')] * 256; mrun = [float('-inf')] * 64 + [float('nan')] * 64
    o = [[[[0.0] * 4 for _ in range(ONT)] for _ in range(MT)] for _ in range(32 * WARPS)]
    lsum = [[[0.0, 0.0] for _ in range(SMT)] for _ in range(32 * WARPS)]
    par = 0
    for t in range(tb, te):
        valid = min(TILE, ctx - t * TILE)
        ts.v = {}
        for i in range(TILE * 72):
            r, cc = divmod(i, 72)
            for k in range(8): ts.put(swz(r, cc, ROW_BYTES) + 2 * k, C[t * TILE + r][cc * 8 + k] if r < valid else 0.0)
        S = {}
        for w in range(WARPS):
            rg, tgi = w % RG, w // RG; srow0, stok0 = rg * 16 * SMT, tgi * STOK
            s = [[[[0.0] * 4 for _ in range(32)] for _ in range(SNT)] for _ in range(SMT)]
            for kk in range(0, D // 16, 2):
                a = [[ldsm(qs, [swz(srow0 + 16 * mt + (l & 15), 2 * (kk + h) + (l >> 4), ROW_BYTES) for l in range(32)]) for h in range(2)] for mt in range(SMT)]
                b = [[None] * SNT for _ in range(2)]
                if SNT == 2:
                    for h in range(2):
                        R = ldsm(ts, [swz(stok0 + (l & 7) + ((l >> 4) << 3), 2 * (kk + h) + ((l >> 3) & 1), ROW_BYTES) for l in range(32)])
                        b[h][0] = ([R[l][0] for l in range(32)], [R[l][1] for l in range(32)])
                        b[h][1] = ([R[l][2] for l in range(32)], [R[l][3] for l in range(32)])
                else:
                    R = ldsm(ts, [swz(stok0 + (l & 7), 2 * kk + (l >> 3), ROW_BYTES) for l in range(32)])
                    b[0][0] = ([R[l][0] for l in range(32)], [R[l][1] for l in range(32)])
                    b[1][0] = ([R[l][2] for l in range(32)], [R[l][3] for l in range(32)])
                for h in range(2):
                    for mt in range(SMT):
                        for j in range(SNT):
                            mma(s[mt][j], a[mt][h], b[h][j][0], b[h][j][1])
            # mask + maxima
            for l in range(32):
                g, c = l // 4, l % 4
                for mt in range(SMT):
                    for j in range(SNT):
                        for e in range(4):
                            col = stok0 + 8 * j + 2 * c + (e & 1)
                            s[mt][j][l][e] = s[mt][j][l][e] * scale_log2 if col < valid else float('-inf')
            for mt in range(SMT):
                for h in range(2):
                    for g in range(8):
                        mx = max(s[mt][j][4 * g + c][2 * h + e] for j in range(SNT) for c in range(4) for e in range(2))
                        red[tgi * ROWS + srow0 + 16 * mt + g + 8 * h] = mx
            S[w] = s
        mold = mrun[par * 64:par * 64 + 64]
        newm = list(mrun)
        for w in range(WARPS):
            rg, tgi = w % RG, w // RG; srow0, stok0 = rg * 16 * SMT, tgi * STOK
            s = S[w]
            for l in range(32):
                g, c = l // 4, l % 4
                for mt in range(SMT):
                    for h in range(2):
                        r = srow0 + 16 * mt + g + 8 * h
                        mn = max([mold[r]] + [red[k * ROWS + r] for k in range(TG)])
                        corr = 2 ** (mold[r] - mn) if mold[r] != float('-inf') else 0.0
                        sm = 0.0
                        for j in range(SNT):
                            p0 = 2 ** (s[mt][j][l][2 * h] - mn) if s[mt][j][l][2 * h] != float('-inf') else 0.0
                            p1 = 2 ** (s[mt][j][l][2 * h + 1] - mn) if s[mt][j][l][2 * h + 1] != float('-inf') else 0.0
                            sm += p0 + p1
                            col = stok0 + 8 * j + 2 * c
                            off = swz(r, col >> 3, 128) + (col & 7) * 2
                            ps.put(off, bf16(p0)); ps.put(off + 2, bf16(p1))
                        lsum[w * 32 + l][mt][h] = lsum[w * 32 + l][mt][h] * corr + sm
            oc = {}
            for l in range(32):
                g, c = l // 4, l % 4
                for mt in range(MT):
                    for h in range(2):
                        r = 16 * mt + g + 8 * h
                        mn = max([mold[r]] + [red[k * ROWS + r] for k in range(TG)])
                        oc[(l, mt, h)] = 2 ** (mold[r] - mn) if mold[r] != float('-inf') else 0.0
                        if w == 0 and c == 0: newm[(par ^ 1) * 64 + r] = mn
            S[w] = oc
        mrun = newm
        for w in range(WARPS):
            oc = S[w]; ocol0 = w * 64
            for l in range(32):
                for mt in range(MT):
                    for j in range(ONT):
                        for e in range(4): o[w * 32 + l][mt][j][e] *= oc[(l, mt, e >> 1)]
            for ks in range(TILE // 16):
                a = [ldsm(ps, [swz(16 * mt + (l & 15), 2 * ks + (l >> 4), 128) for l in range(32)]) for mt in range(MT)]
                for jj in range(ONT // 2):
                    R = ldsm(ts, [swz(16 * ks + (l & 7) + (((l >> 3) & 1) << 3), (ocol0 >> 3) + 2 * jj + (l >> 4), ROW_BYTES) for l in range(32)], trans=True)
                    b0 = [R[l][0] for l in range(32)]; b1 = [R[l][1] for l in range(32)]
                    b2 = [R[l][2] for l in range(32)]; b3 = [R[l][3] for l in range(32)]
                    for mt in range(MT):
                        d0 = [o[w * 32 + l][mt][2 * jj] for l in range(32)]; mma(d0, a[mt], b0, b1)
                        d1 = [o[w * 32 + l][mt][2 * jj + 1] for l in range(32)]; mma(d1, a[mt], b2, b3)
        par ^= 1
    # sums
    for w in range(WARPS):
        rg, tgi = w % RG, w // RG; srow0 = rg * 16 * SMT
        for mt in range(SMT):
            for h in range(2):
                for g in range(8):
                    red[tgi * ROWS + srow0 + 16 * mt + g + 8 * h] = sum(lsum[w * 32 + 4 * g + c][mt][h] for c in range(4))
    out = [[None] * DV for _ in range(ROWS)]; lse = [None] * ROWS
    for w in range(WARPS):
        ocol0 = w * 64
        for l in range(32):
            g, c = l // 4, l % 4
            for mt in range(MT):
                for h in range(2):
                    r = 16 * mt + g + 8 * h
                    tot = sum(red[k * ROWS + r] for k in range(TG))
                    for j in range(ONT):
                        out[r][ocol0 + 8 * j + 2 * c] = o[w * 32 + l][mt][j][2 * h] / tot
                        out[r][ocol0 + 8 * j + 2 * c + 1] = o[w * 32 + l][mt][j][2 * h + 1] / tot
                    lse[r] = mrun[par * 64 + r] + math.log2(tot)
    # reference over tokens of tiles [tb, te)
    bad = 0; worst = 0
    toks = [x for x in range(tb * TILE, min(te * TILE, ctx))]
    for r in range(ROWS):
        sc = [sum(q[r][i] * C[x][i] for i in range(D)) * scale_log2 for x in toks]
        m = max(sc); p = [2 ** (v - m) for v in sc]; L = sum(p)
        want_lse = m + math.log2(L)
        if abs(want_lse - lse[r]) > 1e-3: bad += 1
        ref = [sum(p[k] * C[x][i] for k, x in enumerate(toks)) / L for i in range(DV)]
        mx = max(abs(v) for v in ref)
        for i in range(DV):
            e = abs(out[r][i] - ref[i])
            worst = max(worst, e / mx)
            if not (e <= mx / 64): bad += 1
    print(f"ROWS {ROWS} ctx {ctx} tiles [{tb},{te}): bad {bad}, worst {worst:.2e}")
    return bad

if __name__ == '__main__':
    rows = int(sys.argv[1]); ctx = int(sys.argv[2]); tb = int(sys.argv[3]); te = int(sys.argv[4])
    sys.exit(1 if run(rows, ctx, tb, te, 5) else 0)

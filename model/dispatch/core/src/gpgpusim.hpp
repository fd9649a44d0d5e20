// GPGPU-Sim's CTA issue: the compiled twin of model/dispatch/gpgpusim.py
// (GpgpuSimMatcher, GpgpuSimSelector, GpgpuSimConcurrentSelector), rule by rule (G1-G9 in
// its docstring).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "ownclock.hpp"

namespace core {

constexpr int MAX_CTA = 32;
static_assert(MAX_CTA <= 64, "slot() keeps the held slots in 64 bits");

template <class E, int W>
class GpgpuSim {
public:
    GpgpuSim(OwnClock<E, W>& own, bool concurrent)
        : own(own), e(own.e), concurrent(concurrent), ap_kernel(e.cfg.aps), last_ap(e.cfg.aps - 1) {}

    // -- GpgpuSimMatcher ----------------------------------------------------------------------
    // cta_limit (G6): MAX_CTA, or ceil(grid / APs) for a kernel of grid < MAX_CTA x APs WGs.
    int64_t cta_limit(const WorkGroup& wg) const {
        const int64_t P = e.cfg.aps;
        if (wg.grid < 0 || wg.grid >= MAX_CTA * P) return MAX_CTA;
        return (wg.grid + P - 1) / P;
    }
    // slot: the lowest free WG slot of `ap` (-1: MAX_CTA WGs there).
    int slot(int ap) const {
        uint64_t used = 0;                      // bit k: slot k held (k < MAX_CTA <= 64)
        for (const Record& r : own.records[ap]) used |= uint64_t{1} << r.slot;
        const int k = std::countr_one(used);
        return k < MAX_CTA ? k : -1;
    }
    // placement (G8): wave i of the WG in slot k is warp k w + i, on PEU (k w + i) mod Q.
    bool placement(const WorkGroup& wg, int ap, std::vector<int>& row) const {
        const int k = slot(ap);
        if (k < 0) return false;
        const int64_t w = wg.waves, Q = e.cfg.peus;
        if ((k + 1) * w > Q * e.cfg.wave_slots) return false;   // the slot's warps do not exist
        // Waves k w .. k w + w - 1 round the PEUs from PEU (k w) mod Q: each PEU gets w / Q,
        // and the w mod Q PEUs from that one on one more.
        // (Ints: w is at most Q x wave slots here, so k w fits.)
        const int peus = int(Q), waves = int(w), first = k * waves % peus, each = waves / peus,
                  more = waves % peus;
        row.resize(peus);
        for (int q = 0, after = peus - first; q < peus; ++q, ++after) {   // after: (q - first) mod Q
            if (after == peus) after = 0;
            row[q] = each + (after < more);
        }
        return true;
    }
    bool fits(const WorkGroup& wg, int ap, std::vector<int>& row) const {
        if (wg.waves > e.res.ap_slots[ap] || int64_t(own.records[ap].size()) >= cta_limit(wg)) return false;
        return placement(wg, ap, row) && own.peu_fits(wg, ap, row);
    }

    // -- GpgpuSimSelector ---------------------------------------------------------------------
    // select_kernel (G2): the sticky kernel while it has WGs, else the next one in slot order.
    Kernel select_kernel() {
        if (own.has_wgs(last_kernel)) return last_kernel;
        const int start = last_kernel.none() ? 0 : last_kernel.channel + 1;
        const int count = e.opt.channel_count;
        for (int n = 0; n < count; ++n) {
            const Kernel k = own.kernel((start + n) % count);
            if (own.has_wgs(k)) {
                last_kernel = k;
                return k;
            }
        }
        return {};
    }

    void step(int64_t cycle, bool& dispatched, bool& awake, bool& matched, bool& waiting) {
        waiting = e.any_heads();
        int issued = 0;
        const int P = e.cfg.aps, first = last_ap + 1;
        std::vector<int> row;
        for (int k = 0; k < P; ++k) {
            const int ap = (first + k) % P;
            Kernel kernel;
            if (concurrent) {
                kernel = select_kernel();
            } else {
                kernel = ap_kernel[ap];
                if (!own.has_wgs(kernel) && own.records[ap].empty()) {   // G3: drained
                    const Kernel chosen = select_kernel();
                    if (!chosen.none()) ap_kernel[ap] = chosen;
                    kernel = chosen;
                }
            }
            if (!own.has_wgs(kernel)) continue;
            const int64_t index = e.channels[kernel.channel].front();
            const WorkGroup& wg = e.wgs[index];
            if (fits(wg, ap, row)) {
                const int k_slot = slot(ap);
                const int64_t id = wg.id;
                if (own.dispatch(index, ap, row, cycle)) {
                    own.records[ap].push_back(Record{id, k_slot});
                    ++issued;
                    last_ap = ap;
                }
            }
        }
        dispatched = matched = issued > 0;
        awake = false;
    }

private:
    OwnClock<E, W>& own;
    E& e;
    bool concurrent;
    Kernel last_kernel;                 // m_last_issued_kernel
    std::vector<Kernel> ap_kernel;      // each SM's kernel
    int last_ap;                        // the last AP that issued
};

}  // namespace core

// The matcher, the selector (the seed's and the three comparison rules), the queues and the
// allocation record: compiled twins of model/dispatch/matcher.py, selector.py,
// baselines.py (strict, rr_first_fit, blocking_buffer) and queues.py, the same state changed
// by the same steps (the Python stages' memo of fit masks is a speed-up that changes no
// result; here every mask is computed). Held to them by whole runs (tests/test_core_engine.py).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "resources.hpp"

namespace core {

// model.dispatch.config.WorkGroup (what a run reads and fills in); -1 stands for None.
struct WorkGroup {
    int64_t id = 0;
    int channel = 0, priority = 0, waves = 1, vgpr = 0, sgpr = 0, lds = 0;
    int64_t duration = 0, arrival = 0, parent = -1, work = -1, grid = -1;
    bool independent = false, barrier = false;
    int64_t dispatched = -1, completed = -1;
    int ap = -1;
    bool done = false;                     // completed (or rejected): no longer live
};

// The run's WGs by index (in arrival order, split parts where they were made), holding only
// those from the oldest not yet done: a WG done (completed, rejected, or a completed part)
// at the front is dropped (`reclaim`), so a whole trace's memory follows the WGs in flight,
// as the Python engine's does. `keep_all` (the event log names every WG) drops none.
class WgTable {
public:
    WorkGroup& operator[](int64_t index) { return items[size_t(index - base)]; }
    const WorkGroup& operator[](int64_t index) const { return items[size_t(index - base)]; }
    int64_t size() const { return base + int64_t(items.size()); }
    bool held(int64_t index) const { return index >= base; }     // not dropped
    void push_back(const WorkGroup& wg) { items.push_back(wg); }
    void reclaim() {
        while (!keep_all && !items.empty() && items.front().done) {
            items.pop_front();
            ++base;
        }
    }
    // Every WG of the run (only with keep_all: none was dropped).
    auto begin() const { return items.begin(); }
    auto end() const { return items.end(); }
    bool keep_all = false;

private:
    std::deque<WorkGroup> items;
    int64_t base = 0;
};

// The submitted WGs as launches (model.dispatch.config.LaunchWorkload; a list's WGs are
// launches of one): per launch a template and a count, the WGs made as they arrive, so a
// whole trace costs a few numbers per launch until its WGs arrive.
struct Source {
    std::vector<WorkGroup> templates;      // each launch's first WG (barrier as given)
    std::vector<int64_t> counts;
    size_t launch = 0;
    int64_t offset = 0;

    // The next WG's arrival (some WG is left: the run takes `submitted` of them).
    int64_t next_arrival() const { return templates[launch].arrival; }
    WorkGroup take() {
        WorkGroup wg = templates[launch];
        wg.id += offset;
        wg.barrier = wg.barrier && offset == 0;
        if (++offset == counts[launch]) {
            ++launch;
            offset = 0;
        }
        return wg;
    }
};

// The policy fields the decision reads (model.dispatch.config.PolicyConfig).
struct Rules {
    // selection: 0 multi, 1 strict, 2 rr_first_fit, 3 blocking_buffer, then the faithful
    // baselines (ownclock.hpp, Selection)
    int selection = 0;
    // units: 0 blocks, 1 ap_range, 2 counted, 3 wave_regions (units.hpp, UnitKind)
    int units = 0;
    // ap_choice: 0 lowest, 1 round_robin, 2 resource, 3 instruction, 4 combined
    int ap_choice = 4;
    int64_t resource_weight = 1, instruction_weight = 1;
    bool rotate = true, combined_all = false;
    std::vector<int64_t> windows;
    int64_t split_threshold = 0;
    int lfsr_seed = 0xACE1;
    int64_t release_limit = 0;
    int decision_pipeline = 0, score_latency = 0;
    bool rotating_scores = false;          // score_refresh = "rotating" (model.dispatch.scores)
    int64_t resource_weights[4] = {1, 1, 1, 1};
    std::vector<int64_t> wave_power;       // per channel: one wave's power (1/256)
    std::string circuit_name = "exact";
    bool least_loaded = false;             // wave_placement: "least_loaded", else "split"
};

// A few 64-bit words: inline up to INLINE (256 APs: a mask made every evaluated cycle costs
// no heap allocation), on the heap beyond.
class ApWords {
public:
    static constexpr size_t INLINE = 4;
    explicit ApWords(size_t count = 0) : n(count) {
        if (n > INLINE) large.assign(n, 0);
    }
    size_t size() const { return n; }
    uint64_t* begin() { return n > INLINE ? large.data() : small.data(); }
    const uint64_t* begin() const { return n > INLINE ? large.data() : small.data(); }
    uint64_t* end() { return begin() + n; }
    const uint64_t* end() const { return begin() + n; }
    uint64_t& operator[](size_t i) { return begin()[i]; }
    uint64_t operator[](size_t i) const { return begin()[i]; }

private:
    std::array<uint64_t, INLINE> small{};
    std::vector<uint64_t> large;
    size_t n;
};

// An AP mask: bit a for AP a.
struct ApMask {
    ApWords w;
    explicit ApMask(int P = 0) : w((P + 63) / 64) {}
    void set(int a) { w[a >> 6] |= uint64_t{1} << (a & 63); }
    bool test(int a) const { return (w[a >> 6] >> (a & 63)) & 1; }
    void clear(int a) { w[a >> 6] &= ~(uint64_t{1} << (a & 63)); }
    bool any() const {
        for (auto x : w)
            if (x) return true;
        return false;
    }
    int lowest(int from = 0) const {
        for (size_t i = from >> 6; i < w.size(); ++i) {
            uint64_t x = w[i];
            if (i == size_t(from >> 6)) x &= ~uint64_t{0} << (from & 63);
            if (x) return int(i) * 64 + std::countr_zero(x);
        }
        return -1;
    }
    // The set bits, lowest first, into `out` (cleared first; its capacity kept).
    void bits(std::vector<int>& out) const {
        out.clear();
        for (size_t i = 0; i < w.size(); ++i)
            for (uint64_t x = w[i]; x; x &= x - 1) out.push_back(int(i) * 64 + std::countr_zero(x));
    }
};

// model.dispatch.selector.Lfsr.
struct Lfsr {
    uint32_t state;
    int step() {
        const uint32_t lsb = state & 1;
        state >>= 1;
        if (lsb) state ^= 0xB400;
        return int(state);
    }
    int pick(int count) { return step() % count; }
};

// model.dispatch.resources.Allocation: where a WG runs and what it holds.
struct Allocation {
    int64_t wg = 0;                        // index into the run's WG table
    int ap = 0;
    std::vector<int> waves;                // per PEU
    std::vector<Placed> vgpr, sgpr;
    Placed lds;
    int64_t power = 0;
};

// model.dispatch.matcher.Matcher with the split table (wave_placement = "split"), or
// model.dispatch.baselines.LeastLoadedMatcher (wave_placement = "least_loaded", no pointer).
template <int W>
class Matcher {
public:
    Matcher(const Config& c, const Rules& r, const View<W>& v, const Resources<W>& res,
            const std::vector<int>& inflight)
        : cfg(c), rules(r), view(v), res(res), inflight(inflight), pointer(c.aps, 0) {}

    // Waves per PEU of `ap` for a WG of `waves` with the pointer `p` (embodiment 8).
    std::vector<int> row_for(int waves, int p) const {
        const int Q = cfg.peus, quotient = waves / Q, remainder = waves % Q;
        std::vector<int> row(Q);
        for (int q = 0; q < Q; ++q) {
            const int t = ((q - p) % Q + Q) % Q;
            row[q] = quotient + (t < remainder ? 1 : 0);
        }
        return row;
    }
    std::vector<int> row(int waves, int ap) const { return row_for(waves, rules.rotate ? pointer[ap] : 0); }

    void chosen(int ap, int waves) {
        if (rules.least_loaded) return;    // LeastLoadedMatcher.chosen: no pointer to move
        if (rules.rotate) pointer[ap] = (pointer[ap] + waves) % cfg.peus;
    }

    // LeastLoadedMatcher.least_loaded_row: each wave in turn to the PEU with the most free
    // slots (less the waves given to it) whose grown wave group fits the VGPR and SGPR views,
    // ties to the lowest index; empty (None) when some wave fits no PEU.
    std::vector<int> least_loaded_row(const WorkGroup& wg, int ap) const {
        const int Q = cfg.peus, base = ap * Q;
        std::vector<int> counts(Q, 0);
        for (int k = 0; k < wg.waves; ++k) {
            int best = -1, most = 0;
            for (int q = 0; q < Q; ++q) {
                const int room = res.slot(ap, q) - counts[q];
                const int64_t grown = counts[q] + 1;
                if (room > most && grown * wg.vgpr <= view.view[VGPR][base + q] &&
                    grown * wg.sgpr <= view.view[SGPR][base + q]) {
                    best = q;
                    most = room;
                }
            }
            if (best < 0) return {};
            ++counts[best];
        }
        return counts;
    }

    // Matcher.placement: waves per PEU of `ap` under the policy's wave placement (empty: None).
    std::vector<int> placement(const WorkGroup& wg, int ap) const {
        return rules.least_loaded ? least_loaded_row(wg, ap) : row(wg.waves, ap);
    }

    bool fits(const WorkGroup& wg, int ap) const {
        if (wg.lds > view.view[LDS][ap] || wg.waves > res.ap_slots[ap]) return false;
        if (rules.least_loaded) return !least_loaded_row(wg, ap).empty();
        const int Q = cfg.peus, base = ap * Q, p = rules.rotate ? pointer[ap] : 0;
        const int quotient = wg.waves / Q, remainder = wg.waves % Q;
        for (int q = 0; q < Q; ++q) {
            const int t = q >= p ? q - p : q - p + Q;      // (q - p) mod Q, 0 <= q, p < Q
            const int count = quotient + (t < remainder ? 1 : 0);
            if (count && (count > res.slot(ap, q) || int64_t(count) * wg.vgpr > view.view[VGPR][base + q] ||
                          int64_t(count) * wg.sgpr > view.view[SGPR][base + q]))
                return false;
        }
        return true;
    }

    ApMask mask(const WorkGroup& wg) const {
        ApMask m(cfg.aps);
        for (int ap = 0; ap < cfg.aps; ++ap)
            if (fits(wg, ap)) m.set(ap);
        return m;
    }

    // 0 while an in-order barrier holds the head (its channel's earlier WGs still run).
    ApMask head_mask(const WorkGroup& wg) const {
        if (wg.barrier && inflight[wg.channel]) return ApMask(cfg.aps);
        return mask(wg);
    }

    const Config& cfg;
    const Rules& rules;
    const View<W>& view;
    const Resources<W>& res;
    const std::vector<int>& inflight;
    std::vector<int> pointer;
};

// One flag update of step a42: channel, value.
using FlagUpdate = std::pair<int, bool>;

// What select() keeps for keep()/abort(): the a42 flag updates and the LFSR before.
struct Updates {
    bool any = false;
    int priority = 0;
    std::vector<FlagUpdate> flags;
    uint32_t lfsr_state = 0;
};

}  // namespace core

// The free-block view and the resource table: the compiled twins of
// model/dispatch/views.py (View, SharedPending) and model/dispatch/resources.py (History,
// Resources), the same state changed by the same steps. tests/test_core_resources.py holds
// them equal on seeded random take/give/show sequences.
//
// Integers: block counts and indices are int; cycles, power and energies int64_t. The
// Python twins' integers are unbounded: a run is compiled only when its power history fits
// 63 bits (Gpu::energy_fits).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "bits.hpp"

namespace core {

enum Resource : int { VGPR = 0, SGPR = 1, LDS = 2 };
inline const char* resource_name(int r) {
    static const char* names[] = {"vgpr", "sgpr", "lds"};
    return names[r];
}

// What a run needs of GpuConfig and PolicyConfig (model/dispatch/core/__init__.py fills it).
struct Config {
    int aps = 1, peus = 1, wave_slots = 1, priorities = 1;
    int size[3] = {1, 1, 1};              // blocks per VGPR file, SGPR file, LDS
    // circuit: 0 exact, 1 full, 2 grouped, 3 sampled, 4 shared
    int circuit = 0, group_size = 1, circuit_latency = 0;
    std::vector<int> samples[3];          // sampled lengths (k + 1), ascending, per resource
    std::vector<int> shared_period[3];    // shared: the period of each VGPR/SGPR file, LDS
    int shared_periods = 1;
    bool ema_history = true;
    int64_t history_cycles = 1;
    int64_t power_window = 1024;
};

// One placed need: blocks start .. start + length - 1 (length 0: none), or, when `mask`
// holds words (a baseline's non-contiguous units, model.dispatch.units), the blocks of that
// bit mask (least significant word first; `start` its lowest block, the event log's
// first_block, `length` its count).
struct Placed {
    int start = -1, length = 0;
    std::vector<uint64_t> mask;
    bool none() const { return length == 0 && start < 0; }
};

// model.dispatch.resources.History: an AP's executed instruction energy, piecewise linear.
struct History {
    std::vector<int64_t> times{0}, energies{0}, rates{0};

    int64_t energy(int64_t cycle) const {
        const auto at = std::upper_bound(times.begin(), times.end(), cycle) - times.begin() - 1;
        return energies[at] + rates[at] * (cycle - times[at]);
    }

    void change(int64_t cycle, int64_t delta, int64_t keep) {
        if (times.back() == cycle) {
            rates.back() += delta;
        } else {
            const int64_t e = energy(cycle);
            energies.push_back(e);
            times.push_back(cycle);
            rates.push_back(rates.back() + delta);
        }
        if (times.size() > 64 && times[32] < cycle - keep) {
            times.erase(times.begin(), times.begin() + 32);
            energies.erase(energies.begin(), energies.begin() + 32);
            rates.erase(rates.begin(), rates.begin() + 32);
        }
    }

    // Energy executed in cycles max(0, cycle - length) .. cycle - 1.
    int64_t window(int64_t cycle, int64_t length) const {
        const int64_t last = times.back(), start = cycle - length;
        if (start >= last) return rates.back() * length;
        const int64_t end = cycle >= last ? energies.back() + rates.back() * (cycle - last)
                                          : energy(cycle);
        return start > 0 ? end - energy(start) : end;
    }
};

// A view update: from cycle `visible` the matcher sees `length` for instance `index`.
struct Update {
    int64_t visible;
    int resource, index, length;
};

// model.dispatch.views.View with its pending updates (a FIFO, or embodiment 7's heap).
template <int W>
class View {
public:
    explicit View(const Config& c) : cfg(c) {
        counts[VGPR] = counts[SGPR] = c.aps * c.peus;
        counts[LDS] = c.aps;
        for (int r = 0; r < 3; ++r) {
            idle[r] = circuit(r, Bits<W>::ones(c.size[r]));
            view[r].assign(counts[r], idle[r]);
        }
        for (int r = 0; r < 2; ++r) view_sum[r].assign(c.aps, c.peus * view[r][0]);
    }

    // The policy's circuit on a status word of resource r (1 = free).
    int circuit(int r, const Bits<W>& bits) const {
        switch (cfg.circuit) {
            case 2: return grouped_run(bits, cfg.size[r], cfg.size[r] / cfg.group_size);
            case 3: return sampled_length(longest_run(bits), cfg.samples[r]);
            default: return longest_run(bits);
        }
    }
    bool circuit_is_longest() const { return cfg.circuit != 2 && cfg.circuit != 3; }

    // What the circuit reports on an idle instance (asked at every arrival: kept).
    int idle_length(int r) const { return idle[r]; }

    void push(const Update& u) {
        if (cfg.circuit != 4) {
            fifo.push_back(u);
            return;
        }
        const auto& periods = cfg.shared_period[u.resource];
        const int period = periods[u.index % periods.size()];
        const int64_t C = cfg.shared_periods;
        const int64_t shown = u.visible + (((period - u.visible) % C) + C) % C + 1;
        heap.push({shown, order++, {shown, u.resource, u.index, u.length}});
    }

    bool pending() const { return cfg.circuit != 4 ? !fifo.empty() : !heap.empty(); }
    int64_t next_visible() const {
        return cfg.circuit != 4 ? fifo.front().visible : heap.top().update.visible;
    }
    size_t pending_count() const { return cfg.circuit != 4 ? fifo.size() : heap.size(); }

    // Step 3: every update due by `cycle` into the view; the APs whose view changed are
    // appended to `changed` (each once, in order of first change).
    void show(int64_t cycle, std::vector<int>& changed) {
        while (pending() && next_visible() <= cycle) {
            Update u;
            if (cfg.circuit != 4) {
                u = fifo.front();
                fifo.pop_front();
            } else {
                u = heap.top().update;
                heap.pop();
            }
            int& old = view[u.resource][u.index];
            if (old == u.length) continue;
            const int ap = u.resource == LDS ? u.index : u.index / cfg.peus;
            if (u.resource != LDS) view_sum[u.resource][ap] += u.length - old;
            old = u.length;
            if (std::find(changed.begin(), changed.end(), ap) == changed.end())
                changed.push_back(ap);
        }
    }

    const Config& cfg;
    int counts[3];
    int idle[3];
    std::vector<int> view[3];
    std::vector<int64_t> view_sum[2];

private:
    struct Item {
        int64_t shown, order;
        Update update;
        bool operator>(const Item& o) const {
            return shown != o.shown ? shown > o.shown : order > o.order;
        }
    };
    std::deque<Update> fifo;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    int64_t order = 0;
};

// model.dispatch.resources.Resources (blocks units): status words, counts, slots, power.
template <int W>
class Resources {
public:
    Resources(const Config& c, View<W>& v) : cfg(c), view(v) {
        const int P = c.aps, Q = c.peus;
        for (int r = 0; r < 3; ++r) {
            const int n = c.size[r], count = v.counts[r];
            bits[r].assign(count, Bits<W>::ones(n));
            largest[r].assign(count, n);
            free[r].assign(count, n);
            held[r].assign(count, 0);
            held_total[r] = 0;
        }
        slots.assign(size_t(P) * Q, c.wave_slots);
        ap_slots.assign(P, Q * c.wave_slots);
        slots_free = int64_t(P) * Q * c.wave_slots;
        dirty_flag.assign(P, 0);
        power.assign(P, 0);
        ema.assign(P, 0);
        history.assign(P, History{});
        keep = 2 * std::max(c.history_cycles, c.power_window);
        shift = 0;
        for (int64_t h = c.history_cycles; h > 1; h >>= 1) ++shift;
    }

    int slot(int ap, int q) const { return slots[size_t(ap) * cfg.peus + q]; }

    void mark_dirty(int ap) {
        if (!dirty_flag[ap]) {
            dirty_flag[ap] = 1;
            dirty.push_back(ap);
        }
    }

    // Take (`take`) or give back blocks start .. start + length - 1 of one instance.
    void change(int r, int index, Placed placed, int64_t cycle, int64_t visible, bool take) {
        mark_dirty(r == LDS ? index : index / cfg.peus);
        const Bits<W> mask = placed.mask.empty() ? Bits<W>::range(placed.start, placed.length)
                                                 : Bits<W>::of_words(placed.mask);
        Bits<W>& word = bits[r][index];
        int length = placed.length;
        if (take) {
            if (!word.covers(mask))
                violation("cycle " + std::to_string(cycle) + ": " + resource_name(r) + "[" +
                          std::to_string(index) + "] blocks " + blocks(placed) +
                          " allocated while some are in use");
            word &= ~mask;
        } else {
            if ((word & mask).any())
                violation("cycle " + std::to_string(cycle) + ": " + resource_name(r) + "[" +
                          std::to_string(index) + "] blocks " + blocks(placed) +
                          " released while some are free");
            word |= mask;
            length = -length;
        }
        held[r][index] += length;
        held_total[r] += length;
        const int seen = view.circuit(r, word);
        largest[r][index] = view.circuit_is_longest() ? seen : longest_run(word);
        free[r][index] = word.count();
        view.push({visible, r, index, seen});
    }

    // Resources.take / give_back of one allocation: per PEU its VGPR and SGPR placement,
    // its LDS and its waves per PEU (`waves` the WG's total).
    void apply(int ap, const std::vector<int>& peu_waves, const std::vector<Placed>& vgpr,
               const std::vector<Placed>& sgpr, Placed lds, int waves, int64_t cycle,
               int64_t visible, bool take) {
        mark_dirty(ap);
        const int base = ap * cfg.peus;
        for (int q = 0; q < cfg.peus; ++q)
            if (!vgpr[q].none()) change(VGPR, base + q, vgpr[q], cycle, visible, take);
        for (int q = 0; q < cfg.peus; ++q)
            if (!sgpr[q].none()) change(SGPR, base + q, sgpr[q], cycle, visible, take);
        if (!lds.none() && lds.length) change(LDS, ap, lds, cycle, visible, take);
        const int sign = take ? -1 : 1;
        for (int q = 0; q < cfg.peus; ++q) slots[size_t(base) + q] += sign * peu_waves[q];
        ap_slots[ap] += sign * waves;
        slots_free += sign * waves;
    }

    // -- embodiment 10's history ---------------------------------------------------------
    void advance_ema(int64_t cycle) {
        const int64_t steps = cycle - ema_time;
        if (steps <= 0) return;
        for (int ap = 0; ap < cfg.aps; ++ap) {
            int64_t x = ema[ap];
            const int64_t p = power[ap];
            for (int64_t s = 0; s < steps; ++s) {
                const int64_t following = x - (x >> shift) + p;
                if (following == x) break;
                x = following;
            }
            ema[ap] = x;
        }
        ema_time = cycle;
    }

    void change_power(int ap, int64_t cycle, int64_t delta) {
        if (cfg.ema_history) advance_ema(cycle);
        power[ap] += delta;
        history[ap].change(cycle, delta, keep);
        if (cycle > last_power_change) last_power_change = cycle;
    }

    std::vector<int64_t> history_scores(int64_t cycle) {
        if (cfg.ema_history) {
            advance_ema(cycle);
            return ema;
        }
        std::vector<int64_t> out(cfg.aps);
        for (int ap = 0; ap < cfg.aps; ++ap) out[ap] = history[ap].window(cycle, cfg.history_cycles);
        return out;
    }

    int64_t history_window(int ap, int64_t cycle, int64_t length) const {
        return history[ap].window(cycle, length);
    }

    const Config& cfg;
    View<W>& view;
    std::vector<Bits<W>> bits[3];
    std::vector<int> largest[3], free[3], held[3];
    int64_t held_total[3];
    std::vector<int> slots, ap_slots;     // slots[ap * Q + q]
    int64_t slots_free;
    std::vector<int> dirty;               // APs changed since the metrics last sampled
    std::vector<char> dirty_flag;
    std::vector<int64_t> power, ema;
    std::vector<History> history;
    int64_t ema_time = 0, last_power_change = 0, keep = 0;
    int shift = 0;
    std::vector<std::string> violations;  // the first messages (model.dispatch.checks)
    int64_t violation_count = 0;

    void violation(std::string message) {
        ++violation_count;
        violations.push_back(std::move(message));
    }

private:
    // model.dispatch.resources._blocks: `a..b` when contiguous, else the mask in hex.
    static std::string blocks(const Placed& p) {
        if (!p.mask.empty() && Bits<W>::of_words(p.mask) != Bits<W>::range(p.start, p.length))
            return Bits<W>::of_words(p.mask).hex();
        return std::to_string(p.start) + ".." + std::to_string(p.start + p.length - 1);
    }
};

// model.dispatch.allocator.Allocator.plan: first-fit starts of every need, in the current
// status; false when one does not fit. `peu_waves` per PEU; needs per wave.
template <int W>
bool plan(const Resources<W>& res, int ap, const std::vector<int>& peu_waves, int vgpr,
          int sgpr, int lds, std::vector<Placed>& vgpr_plan, std::vector<Placed>& sgpr_plan,
          Placed& lds_plan) {
    const int Q = res.cfg.peus, base = ap * Q;
    vgpr_plan.assign(Q, Placed{});
    sgpr_plan.assign(Q, Placed{});
    lds_plan = Placed{};
    for (int q = 0; q < Q; ++q) {
        int need = peu_waves[q] * vgpr;
        if (need) {
            const int start = first_fit(res.bits[VGPR][base + q], need);
            if (start < 0) return false;
            vgpr_plan[q] = {start, need};
        }
        need = peu_waves[q] * sgpr;
        if (need) {
            const int start = first_fit(res.bits[SGPR][base + q], need);
            if (start < 0) return false;
            sgpr_plan[q] = {start, need};
        }
    }
    if (lds) {
        const int start = first_fit(res.bits[LDS][ap], lds);
        if (start < 0) return false;
        lds_plan = {start, lds};
    }
    return true;
}

// model.dispatch.allocator.Allocator.still_free.
template <int W>
bool still_free(const Resources<W>& res, int ap, const std::vector<int>& peu_waves,
                const std::vector<Placed>& vgpr_plan, const std::vector<Placed>& sgpr_plan,
                Placed lds_plan) {
    const int Q = res.cfg.peus, base = ap * Q;
    for (int q = 0; q < Q; ++q)
        if (peu_waves[q] > res.slot(ap, q)) return false;
    for (int q = 0; q < Q; ++q) {
        for (int r : {VGPR, SGPR}) {
            const Placed p = r == VGPR ? vgpr_plan[q] : sgpr_plan[q];
            if (!p.none() && !res.bits[r][base + q].covers(Bits<W>::range(p.start, p.length)))
                return false;
        }
    }
    if (!lds_plan.none() && !res.bits[LDS][ap].covers(Bits<W>::range(lds_plan.start, lds_plan.length)))
        return false;
    return true;
}

}  // namespace core

// The shared-issue execution model (execution = "shared"): a line-by-line port of
// model/dispatch/execution.py's SharedExecution. The waves resident on a PEU share its issue
// width; a WG is released drain + 1 cycles after its last wave group has issued its work.
// The engine (engine.hpp) calls finish_until / next_finish / start where
// model/dispatch/engine.py's DispatchSimulator.run and commit call them.
//
// With `pooled`, PooledExecution (MIAOW, units = "ap_range"): one issue pool per AP of
// peus x issue width slots, shared by every wave resident on the AP, a WG one wave group.
//
// Integers: Python's are unbounded; here the service counters and finish tags are `Int`:
// int64_t for the per-PEU model, __int128 for the pooled one (its unit, lcm(1 .. peus x wave
// slots), is about 2^88 on the default GPU). The engine refuses a run whose bound does not
// fit (shared_fits; std::overflow_error before it runs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace core {

// The engine's completions heap: (release cycle, WG id, allocation slot), smallest first
// (the Python engine's heap of (release cycle, WG id, Allocation)).
using Completion = std::tuple<int64_t, int64_t, int64_t>;
using Completions = std::priority_queue<Completion, std::vector<Completion>, std::greater<>>;

// Whether the shared-issue model's integers stay below 2^bits (63 for int64_t, 127 for
// __int128) in a run of `cycles` whose largest work per wave is `work`: their bound is
// unit x (cycles + work + slots + 2), unit = lcm(1 .. slots) (the service grows by at most
// unit a cycle, a finish tag is the service plus work x unit, a rate at most slots x unit).
inline bool shared_fits(int slots, int64_t cycles, int64_t work, int bits) {
    using Wide = unsigned __int128;
    const Wide most = (Wide(1) << bits) - 1;
    Wide unit = 1;
    for (int n = 1; n <= slots; ++n) {
        Wide a = unit, b = n;                    // unit = lcm(unit, n)
        while (b) a = std::exchange(b, a % b);
        if (unit / a > most / Wide(n)) return false;
        unit = unit / a * n;
    }
    return unit <= most / (Wide(cycles) + Wide(work) + Wide(slots) + 2);
}

// model.dispatch.execution.SharedExecution (and, `pooled`, PooledExecution).
template <class Int>
class SharedExecution {
public:
    using Group = std::tuple<Int, int64_t, int>;            // (finish tag F, WG id, waves)
    using Finish = std::tuple<int64_t, int, int64_t>;       // (cycle, PEU, version)
    template <typename T>
    using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<>>;

    SharedExecution(int aps, int peus, int slots, int width, int64_t drain, bool pooled,
                    Completions& completions)
        : Q(pooled ? 1 : peus), pooled(pooled), drain(drain), completions(completions) {
        if (pooled) setup(peus * slots, peus * width, aps);   // "PEU" below: the AP's pool
        else setup(slots, width, aps * peus);
    }

    // SharedExecution.setup: `count` issue pools of `width` slots holding up to `slots` waves.
    void setup(int slots, int width, int count) {
        // 1/unit wave-instructions: lcm(1..slots), so that width / n is whole in units.
        unit = 1;
        for (int n = 1; n <= slots; ++n) {
            Int a = unit, b = n;                 // unit = lcm(unit, n)
            while (b) a = std::exchange(b, a % b);
            unit = unit / a * n;
        }
        rate.assign(size_t(slots) + 1, 0);
        for (int n = 1; n <= slots; ++n) rate[n] = n <= width ? unit : width * unit / n;
        issuing.assign(count, 0);
        service.assign(count, 0);
        service_time.assign(count, 0);
        groups.assign(count, MinHeap<Group>{});
        finish_version.assign(count, 0);
    }

    // SharedExecution.pop_finished: the PEU's wave groups whose work is issued by the end of
    // `cycle` finished in it; a WG whose last group it was is released drain + 1 cycles later.
    void pop_finished(int peu, int64_t cycle) {
        const int64_t start = service_time[peu];
        if (cycle + 1 > start) {
            service[peu] += rate[issuing[peu]] * (cycle + 1 - start);
            service_time[peu] = cycle + 1;
        }
        auto& heap = groups[peu];
        const Int done = service[peu];
        while (!heap.empty() && std::get<0>(heap.top()) <= done) {
            const auto [tag, wg_id, count] = heap.top();
            heap.pop();
            issuing[peu] -= count;
            auto left = groups_left.find(wg_id);
            if (--left->second.first == 0) {
                completions.push({cycle + drain + 1, wg_id, left->second.second});
                groups_left.erase(left);
            }
        }
    }

    // SharedExecution.schedule: push the PEU's next finishing cycle
    // time - 1 - floor((V - F) / rate[n]) (a new version: older entries are stale).
    void schedule(int peu) {
        ++finish_version[peu];
        const auto& heap = groups[peu];
        if (!heap.empty()) {
            const Int r = rate[issuing[peu]];
            const int64_t finish = int64_t(service_time[peu] - 1 - floor_div(service[peu] - std::get<0>(heap.top()), r));
            finish_heap.push({finish, peu, finish_version[peu]});
        }
    }

    // SharedExecution.start: a WG (id `wg_id`, its allocation in `slot`, `total` waves)
    // dispatched in `cycle` to `ap` with `waves` per PEU; `work` is WorkGroup.work, or its
    // duration when None. PooledExecution.start: all its waves one group in the AP's pool.
    void start(int ap, const std::vector<int>& waves, int total, int64_t work, int64_t wg_id,
               int64_t slot, int64_t cycle) {
        const Int tag_work = work * unit;
        if (pooled) {
            pop_finished(ap, cycle);
            groups[ap].push({service[ap] + tag_work, wg_id, total});
            issuing[ap] += total;
            schedule(ap);
            groups_left[wg_id] = {1, slot};
            return;
        }
        const int base = ap * Q;
        int started = 0;
        for (int q = 0; q < Q; ++q) {
            const int count = waves[q];
            if (!count) continue;
            const int peu = base + q;
            pop_finished(peu, cycle);
            groups[peu].push({service[peu] + tag_work, wg_id, count});
            issuing[peu] += count;
            schedule(peu);
            ++started;
        }
        groups_left[wg_id] = {started, slot};
    }

    // SharedExecution.finish_until: every wave-group finish in cycles up to `cycle`, in order.
    void finish_until(int64_t cycle) {
        while (!finish_heap.empty() && std::get<0>(finish_heap.top()) <= cycle) {
            const auto [finish, peu, version] = finish_heap.top();
            finish_heap.pop();
            if (version == finish_version[peu]) {
                pop_finished(peu, finish);
                schedule(peu);
            }
        }
    }

    // SharedExecution.next_finish: the earliest cycle some wave group finishes (None: empty).
    std::optional<int64_t> next_finish() {
        while (!finish_heap.empty() &&
               std::get<2>(finish_heap.top()) != finish_version[std::get<1>(finish_heap.top())])
            finish_heap.pop();
        if (finish_heap.empty()) return std::nullopt;
        return std::get<0>(finish_heap.top());
    }

    // DispatchSimulator.run's skip, `if shared:` branch: nothing is dispatched before
    // `following`, so every wave-group finish before it is final: process those whose
    // release would come first (a release brings `following` forward).
    void skip(int64_t& following) {
        auto finish = next_finish();
        while (finish && *finish + drain + 1 < following) {
            finish_until(*finish);
            if (!completions.empty() && std::get<0>(completions.top()) < following)
                following = std::get<0>(completions.top());
            finish = next_finish();
        }
    }

    static Int floor_div(Int a, Int b) {                    // Python's a // b
        Int q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
    }

    int Q;
    bool pooled;
    int64_t drain;
    Completions& completions;
    Int unit = 1;
    std::vector<Int> rate;
    std::vector<int> issuing;
    std::vector<Int> service;
    std::vector<int64_t> service_time;
    std::vector<MinHeap<Group>> groups;
    MinHeap<Finish> finish_heap;
    std::vector<int64_t> finish_version;
    std::unordered_map<int64_t, std::pair<int, int64_t>> groups_left;   // WG id: (groups, slot)
};

// Back-pressure (dispatch_ready): the held-cycle logic of DispatchSimulator.run. `ready[c]` is
// dispatch_ready(c) for every cycle c below the limit, evaluated in Python before the run
// (the Python engine turns skipping off with dispatch_ready, so it asks about every cycle).
struct BackPressure {
    bool on = false;                       // dispatch_ready is not None
    std::vector<char> ready;
    bool presented = false, dispatched_last = false;
    std::vector<int64_t> held;             // DispatchSimulator.held_cycles

    // `holding`: the decision presented in this cycle is not taken (the cycle is held).
    bool holding(int64_t cycle) {
        if (!on) return false;
        presented = (presented && !ready[cycle - 1]) || dispatched_last;
        const bool hold = presented && !ready[cycle];
        if (hold) held.push_back(cycle);
        return hold;
    }

    // After the early end: the cycles to the limit in which the last decision, still
    // presented, is not taken are held too.
    void after_end(int64_t cycle, int64_t limit) {
        int64_t later = cycle + 1;
        while (on && later < limit) {
            presented = (presented && !ready[later - 1]) || dispatched_last;
            dispatched_last = false;
            if (!(presented && !ready[later])) break;
            held.push_back(later);
            ++later;
        }
    }
};

}  // namespace core

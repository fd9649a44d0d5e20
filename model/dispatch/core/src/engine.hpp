// The run: model/dispatch/engine.py's DispatchSimulator with the fixed execution model and
// the one-clock decision or the decision pipeline (model/dispatch/pipeline.py), for the seed's
// selection and the three comparison rules on blocks units; the metrics the Python model
// samples (model/dispatch/metrics.py), the same integers and the same float operations.
// The shared-issue model and back-pressure are execution.hpp's, called from the run; the
// faithful baselines run on their own clock (faithful.hpp; hooks marked `own`). The
// per-cycle invariant checks are the Python engine's (model/dispatch/core/engine.py's
// unsupported() says which runs compile).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "execution.hpp"
#include "faithful.hpp"
#include "floats.hpp"
#include "stages.hpp"

namespace core {

struct Parent {
    int64_t wg;                            // index of the split WG
    int parts, dispatched = 0, completed = 0;
};

// One row of the event log (model.dispatch.metrics.event_recorder).
struct Event {
    int64_t cycle;
    int kind;                              // index into EVENT_KINDS
    int64_t wg;                            // index into the run's WG table
    int ap = -1;
    std::vector<int> waves;                // empty: none
    bool has_starts = false;
    std::vector<int> vgpr_starts, sgpr_starts;   // -1: none
    int lds_start = -1;
    std::string reason;
};
enum EventKind { RELEASE = 0, ARRIVE, REJECT, DISPATCH, STALE_ABORT, SPLIT };

struct Rejection {
    int64_t id;
    int channel;
    int64_t arrival;
    std::string reason;
};

// A WG chosen by the decision pipeline (model.dispatch.pipeline.Decision).
struct Decision {
    int64_t wg;
    int channel, ap;
    std::vector<int> waves;
    int64_t chosen;
    bool planned = false;
    std::vector<Placed> vgpr, sgpr;
    Placed lds;
};

// The pipeline's registered match (model.dispatch.pipeline.Match).
struct MatchRow {
    bool present = false;
    int64_t wg = -1;
    ApMask mask;
};
// What the score ring keeps of a cycle: every AP's scores, or with rotating scores every AP's
// kept key (model.dispatch.scores).
struct Scores {
    std::vector<int64_t> resource, instruction;
    std::vector<__int128> keys;
};

struct Match {
    std::vector<std::array<MatchRow, 2>> rows;
    std::vector<int64_t> resource, instruction;
    std::vector<__int128> keys;
    std::vector<int> pointers;
};

struct RunOptions {
    int64_t cycles = 20000, warmup = 0, sample_interval = 64, power_window = 1024;
    int channel_count = 1;
    bool skip = true, events = false;
    bool shared = false;                   // execution = "shared" (SharedExecution)
    int issue_width = 1;
    int64_t drain = 0;
    bool back_pressure = false;            // dispatch_ready given: ready[c] for c < cycles
    std::vector<char> ready;
};

template <int W>
class Engine {
public:
    Engine(const Config& c, const Rules& r, const RunOptions& o, Source workload,
           int64_t submitted)
        : cfg(c), rules(r), opt(o), view(cfg), res(cfg, view),
          inflight(o.channel_count, 0),
          matcher(cfg, rules, view, res, inflight), source(std::move(workload)),
          submitted(submitted), channels(o.channel_count),
          last_dispatched(o.channel_count, -1),
          selected(size_t(o.channel_count) * c.priorities, 0),
          peu_waves(size_t(c.aps) * c.peus, 0) {
        lfsr.state = uint32_t(r.lfsr_seed);
        wgs.keep_all = o.events;               // the event log names every WG
        splitting = r.split_threshold > 0 && r.selection == 0;
        per_ap.assign(c.aps, 0.0);
        for (int q = 0; q < 3; ++q) {
            fragments[q].assign(view.counts[q], 0.0);
            fragmented[q].assign(view.counts[q], 0);
        }
        back_pressure.on = o.back_pressure;
        back_pressure.ready = o.ready;
        if (o.shared) {
            // execution_for: MIAOW's pooled model for units "ap_range", with 128-bit counters.
            const bool pool = r.units == AP_RANGE;
            int64_t work = 0;                  // the largest, of the WGs arriving in the run
            for (const WorkGroup& wg : source.templates)
                if (wg.arrival < o.cycles) work = std::max(work, wg.work >= 0 ? wg.work : wg.duration);
            // OverflowError: model/dispatch/engine.py runs it on the Python engine with
            // "not compiled yet: " and this, as model.dispatch.core.engine.unsupported's notes.
            if (!shared_fits(pool ? c.peus * c.wave_slots : c.wave_slots, o.cycles, work, pool ? 127 : 63))
                throw std::overflow_error(std::string("a shared-issue run whose service counters may exceed ") +
                                          (pool ? "128" : "64") + " bits");
            if (pool) pooled.emplace(c.aps, c.peus, c.wave_slots, o.issue_width, o.drain, true, completions);
            else shared.emplace(c.aps, c.peus, c.wave_slots, o.issue_width, o.drain, false, completions);
        }
        if (r.selection >= MIAOW) own = std::make_unique<Faithful<Engine, W>>(*this);   // selector.bind
    }

    // -- the target WG and AP (model.dispatch.selector / baselines) ------------------------
    int64_t rank(int priority, int64_t cycle) const {
        if (rules.windows.empty()) return priority;
        int64_t total = 0;
        for (auto w : rules.windows) total += w;
        int64_t position = cycle % total;
        for (size_t promoted = 0; promoted < rules.windows.size(); ++promoted) {
            if (position < rules.windows[promoted]) return priority == int(promoted) ? -1 : priority;
            position -= rules.windows[promoted];
        }
        return priority;
    }
    bool flag(int channel, int priority) const { return selected[size_t(channel) * cfg.priorities + priority]; }
    void set_flag(int channel, int priority, bool v) { selected[size_t(channel) * cfg.priorities + priority] = v; }

    int tie_break(const std::vector<int>& tied, int priority, std::vector<FlagUpdate>& updates) {
        updates.clear();
        if (tied.size() == 1) return tied[0];
        std::vector<int> clear;
        for (int c : tied)
            if (!flag(c, priority)) clear.push_back(c);
        if (!clear.empty()) {
            const int chosen = clear[lfsr.pick(int(clear.size()))];
            updates.push_back({chosen, true});
            return chosen;
        }
        const int chosen = tied[lfsr.pick(int(tied.size()))];
        for (int c : tied)
            if (c != chosen) updates.push_back({c, false});
        return chosen;
    }

    // Selector.highest: channels `matches` (two or more) with head priorities.
    int highest(const std::vector<int>& matches, const std::vector<int>& priorities, int64_t cycle,
                int& priority, std::vector<FlagUpdate>& updates) {
        int64_t best = INT64_MAX;
        std::vector<int64_t> ranks(matches.size());
        for (size_t i = 0; i < matches.size(); ++i) {
            ranks[i] = rank(priorities[i], cycle);
            best = std::min(best, ranks[i]);
        }
        std::vector<int> tied;
        for (size_t i = 0; i < matches.size(); ++i)
            if (ranks[i] == best) {
                if (tied.empty()) priority = priorities[i];
                tied.push_back(matches[i]);
            }
        return tie_break(tied, priority, updates);
    }

    std::vector<int> channel_order() const {
        std::vector<int> order(opt.channel_count);
        for (int k = 0; k < opt.channel_count; ++k) order[k] = (channel_pointer + k) % opt.channel_count;
        return order;
    }

    // select(): the picked channel (-1: none) and its mask; `matched` any head matched.
    int select(int64_t cycle, ApMask& mask, Updates& updates, bool& matched) {
        updates = Updates{};
        matched = false;
        switch (rules.selection) {
            case 0: {
                auto& matches = scratch.matches;
                auto& priorities = scratch.priorities;
                auto& masks = scratch.masks;
                matches.clear();
                priorities.clear();
                masks.clear();
                for (int c = 0; c < opt.channel_count; ++c) {
                    if (channels[c].empty()) continue;
                    ApMask m = matcher.head_mask(wgs[channels[c].front()]);
                    if (m.any()) {
                        matches.push_back(c);
                        priorities.push_back(wgs[channels[c].front()].priority);
                        masks.push_back(std::move(m));
                    }
                }
                if (matches.empty()) return -1;
                matched = true;
                if (matches.size() == 1) {
                    mask = masks[0];
                    return matches[0];
                }
                updates.any = true;
                updates.lfsr_state = lfsr.state;
                const int channel = highest(matches, priorities, cycle, updates.priority, updates.flags);
                mask = masks[std::find(matches.begin(), matches.end(), channel) - matches.begin()];
                return channel;
            }
            case 1: {
                int best = INT32_MAX;
                bool heads = false;
                for (int c = 0; c < opt.channel_count; ++c)
                    if (!channels[c].empty()) {
                        heads = true;
                        best = std::min(best, wgs[channels[c].front()].priority);
                    }
                if (!heads) return -1;
                for (int c : channel_order())
                    if (!channels[c].empty() && wgs[channels[c].front()].priority == best) {
                        mask = matcher.head_mask(wgs[channels[c].front()]);
                        matched = mask.any();
                        return matched ? c : -1;
                    }
                return -1;
            }
            case 2:
                for (int c : channel_order())
                    if (!channels[c].empty()) {
                        ApMask m = matcher.head_mask(wgs[channels[c].front()]);
                        if (m.any()) {
                            mask = std::move(m);
                            matched = true;
                            return c;
                        }
                    }
                return -1;
            default: {
                if (buffer < 0) {
                    for (int k = 0; k < opt.channel_count; ++k) {
                        const int c = (channel_pointer + k) % opt.channel_count;
                        if (!channels[c].empty()) {
                            buffer = channels[c].front();
                            channels[c].pop_front();
                            channel_pointer = (c + 1) % opt.channel_count;
                            break;
                        }
                    }
                }
                if (buffer < 0) return -1;
                mask = matcher.head_mask(wgs[buffer]);
                matched = mask.any();
                return matched ? wgs[buffer].channel : -1;
            }
        }
    }

    // The pipeline's choice among candidates (Selector.choose and the baselines'); -1: none.
    int choose(const std::vector<int>& cands, const std::vector<int64_t>& cand_wg,
               const std::vector<ApMask>& cand_mask, int64_t cycle) {
        if (rules.selection == 0) {
            std::vector<int> matches, priorities;
            for (size_t i = 0; i < cands.size(); ++i)
                if (cand_mask[i].any()) {
                    matches.push_back(cands[i]);
                    priorities.push_back(wgs[cand_wg[i]].priority);
                }
            if (matches.size() == 1) return matches[0];
            if (matches.empty()) return -1;
            int priority = 0;
            std::vector<FlagUpdate> updates;
            const int chosen = highest(matches, priorities, cycle, priority, updates);
            for (auto [c, v] : updates) set_flag(c, priority, v);
            return chosen;
        }
        auto index = [&](int c) { return int(std::find(cands.begin(), cands.end(), c) - cands.begin()); };
        if (rules.selection == 1) {
            int best = INT32_MAX;
            for (auto w : cand_wg) best = std::min(best, wgs[w].priority);
            for (int c : channel_order()) {
                const int i = index(c);
                if (i < int(cands.size()) && wgs[cand_wg[i]].priority == best)
                    return cand_mask[i].any() ? c : -1;
            }
            return -1;
        }
        for (int c : channel_order()) {
            const int i = index(c);
            if (i < int(cands.size()) && cand_mask[i].any()) return c;
        }
        return -1;
    }

    void advance(int channel, int ap) {
        ap_pointer = (ap + 1) % cfg.aps;
        if (rules.selection == 1 || rules.selection == 2)
            channel_pointer = (channel + 1) % opt.channel_count;
    }

    int64_t resource_score(int ap) const {
        const auto& a = rules.resource_weights;
        return a[0] * view.view_sum[0][ap] + a[1] * view.view_sum[1][ap] + a[2] * view.view[LDS][ap] +
               a[3] * res.ap_slots[ap];
    }

    // Selector.choose_ap; `scores` the pipeline's registered scores (nullptr: now).
    int choose_ap(const ApMask& mask, int64_t cycle, const Match* scores) {
        const int choice = rules.ap_choice;
        if (choice == 0) return mask.lowest();
        if (choice == 1) {
            const int after = mask.lowest(ap_pointer);
            return after >= 0 ? after : mask.lowest();
        }
        auto& candidates = scratch.candidates;
        auto& resource = scratch.resource;
        auto& instruction = scratch.instruction;
        mask.bits(candidates);
        resource.clear();
        instruction.clear();
        if (scores) {
            for (int ap : candidates) {
                resource.push_back(scores->resource[ap]);
                instruction.push_back(scores->instruction[ap]);
            }
        } else {
            if (choice == 2 || choice == 4)
                for (int ap : candidates) resource.push_back(resource_score(ap));
            if (choice == 3 || choice == 4) {
                if (cfg.ema_history) {
                    res.advance_ema(cycle);
                    for (int ap : candidates) instruction.push_back(res.ema[ap]);
                } else {
                    for (int ap : candidates)
                        instruction.push_back(res.history_window(ap, cycle, cfg.history_cycles));
                }
            }
        }
        if (choice == 2)
            return candidates[std::max_element(resource.begin(), resource.end()) - resource.begin()];
        if (choice == 3)
            return candidates[std::min_element(instruction.begin(), instruction.end()) - instruction.begin()];
        int64_t top_r, top_i;
        if (rules.combined_all) {
            std::vector<int64_t> all_r, all_i;
            if (scores) {
                all_r = scores->resource;
                all_i = scores->instruction;
            } else {
                for (int ap = 0; ap < cfg.aps; ++ap) all_r.push_back(resource_score(ap));
                all_i = res.history_scores(cycle);
            }
            top_r = std::max<int64_t>(*std::max_element(all_r.begin(), all_r.end()), 1);
            top_i = std::max<int64_t>(*std::max_element(all_i.begin(), all_i.end()), 1);
        } else {
            top_r = std::max<int64_t>(*std::max_element(resource.begin(), resource.end()), 1);
            top_i = std::max<int64_t>(*std::max_element(instruction.begin(), instruction.end()), 1);
        }
        __int128 best = 0;
        size_t at = 0;
        for (size_t i = 0; i < candidates.size(); ++i) {
            const __int128 score = __int128(rules.resource_weight) * resource[i] * top_i -
                                   __int128(rules.instruction_weight) * instruction[i] * top_r;
            if (i == 0 || score > best) {
                best = score;
                at = i;
            }
        }
        return candidates[at];
    }

    // -- the queues (model.dispatch.queues) -------------------------------------------------
    std::string fits_empty(int waves_per_peu, const WorkGroup& wg, int lds) const {
        const int per_wave[2] = {wg.vgpr, wg.sgpr};
        const char* upper[2] = {"VGPR", "SGPR"};
        for (int r = 0; r < 2; ++r) {
            const int64_t need = int64_t(waves_per_peu) * per_wave[r];
            const int seen = view.idle_length(r);
            if (need > seen)
                return std::to_string(waves_per_peu) + " waves x " + std::to_string(per_wave[r]) + " " +
                       upper[r] + " blocks = " + std::to_string(need) + " on one PEU, but an idle PEU has " +
                       std::to_string(cfg.size[r]) + " (the " + rules.circuit_name +
                       " circuit reports " + std::to_string(seen) + ")";
        }
        if (waves_per_peu > cfg.wave_slots)
            return std::to_string(waves_per_peu) + " waves on one PEU, but a PEU has " +
                   std::to_string(cfg.wave_slots) + " wave slots";
        const int seen = view.idle_length(LDS);
        if (lds > seen)
            return std::to_string(lds) + " LDS blocks, but an idle AP has " + std::to_string(cfg.size[LDS]) +
                   " (the " + rules.circuit_name + " circuit reports " + std::to_string(seen) + ")";
        return "";
    }

    bool admit(int64_t index, int64_t cycle) {
        const WorkGroup& wg = wgs[index];
        event(cycle, ARRIVE, index);
        const int Q = cfg.peus, busiest = (wg.waves + Q - 1) / Q;
        const std::string reason = own && own->own.units.kind != BLOCKS ? own->own.units.idle_reason(wg)
                                                                        : fits_empty(busiest, wg, wg.lds);
        if (reason.empty()) return true;
        if (wg.independent && !wg.barrier && wg.waves > 1 && splitting && busiest <= cfg.wave_slots &&
            fits_empty(1, wg, (wg.lds + wg.waves - 1) / wg.waves).empty())
            return true;
        wgs[index].done = true;
        rejected.push_back({wg.id, wg.channel, wg.arrival,
                            "WG " + std::to_string(wg.id) + " (channel " + std::to_string(wg.channel) +
                                ") can never be dispatched: " + reason});
        event(cycle, REJECT, index, -1, nullptr, nullptr, reason);
        return false;
    }

    bool channel_busy(int channel) const {
        for (const auto& d : flight)
            if (d.channel == channel) return true;
        return false;
    }
    bool splittable_head(int channel) const {
        if (channels[channel].empty() || channel_busy(channel)) return false;
        const WorkGroup& head = wgs[channels[channel].front()];
        return head.independent && !head.barrier && head.waves >= 2 && head.parent < 0;
    }
    bool splittable() const {
        for (int c = 0; c < opt.channel_count; ++c)
            if (splittable_head(c)) return true;
        return false;
    }

    bool split(int64_t cycle) {
        const int lowest = cfg.priorities - 1;
        std::vector<int> heads;
        for (int c = 0; c < opt.channel_count; ++c)
            if (splittable_head(c)) heads.push_back(c);
        for (int c : heads) {
            const int64_t index = channels[c].front();
            channels[c].pop_front();
            const WorkGroup head = wgs[index];
            std::vector<int64_t> parts;
            for (int k = 0; k < head.waves; ++k) {
                WorkGroup part;
                part.id = next_id++;
                part.channel = head.channel;
                part.priority = lowest;
                part.waves = 1;
                part.vgpr = head.vgpr;
                part.sgpr = head.sgpr;
                part.lds = (head.lds + head.waves - 1) / head.waves;
                part.duration = head.duration;
                part.independent = true;
                part.arrival = head.arrival;
                part.parent = head.id;
                part.work = head.work;
                parts.push_back(int64_t(wgs.size()));
                wgs.push_back(part);
            }
            for (auto p : parts) event(cycle, SPLIT, p);
            for (auto it = parts.rbegin(); it != parts.rend(); ++it) channels[c].push_front(*it);
            parents[head.id] = Parent{index, int(parts.size())};
            ++splits;
            sub_workgroups += int64_t(parts.size());
        }
        return !heads.empty();
    }

    bool count_fail(bool matched, bool waiting, int64_t cycle) {
        if (matched || !waiting) {
            g = 0;
            return false;
        }
        ++g;
        if (g > rules.split_threshold) {
            const bool did = split(cycle);
            g = 0;
            return did;
        }
        return false;
    }

    void add_wait(int priority, int channel, int64_t wait, int64_t arrival) {
        wait_priorities.push_back(priority);
        wait_channels.push_back(channel);
        wait_cycles.push_back(wait);
        wait_arrivals.push_back(arrival);
    }

    void queue_dispatched(int64_t index, int64_t cycle) {
        const WorkGroup& wg = wgs[index];
        if (wg.parent < 0) {
            if ((!own || own->in_order()) && last_dispatched[wg.channel] > wg.id)
                violation("cycle " + std::to_string(cycle) + ": channel " + std::to_string(wg.channel) +
                          " dispatched WG " + std::to_string(wg.id) + " after WG " +
                          std::to_string(last_dispatched[wg.channel]) + " (FIFO order)");
            last_dispatched[wg.channel] = wg.id;
            add_wait(wg.priority, wg.channel, cycle - wg.arrival, wg.arrival);
        } else {
            Parent& parent = parents.at(wg.parent);
            if (++parent.dispatched == parent.parts) {
                const WorkGroup& p = wgs[parent.wg];
                add_wait(p.priority, p.channel, cycle - p.arrival, p.arrival);
            }
        }
        ++inflight[wg.channel];
    }

    // -- allocation, commit, release ---------------------------------------------------------
    bool allocate(int64_t index, int ap, int64_t cycle, Allocation& out) {
        const WorkGroup& wg = wgs[index];
        std::vector<int> waves = matcher.placement(wg, ap);
        if (waves.empty()) return false;   // least-loaded: some wave fits no PEU
        for (int q = 0; q < cfg.peus; ++q)
            if (waves[q] > res.slot(ap, q)) return false;
        Allocation a;
        if (!plan(res, ap, waves, wg.vgpr, wg.sgpr, wg.lds, a.vgpr, a.sgpr, a.lds)) return false;
        a.waves = std::move(waves);
        take(index, ap, a, cycle);
        out = std::move(a);
        return true;
    }

    void take(int64_t index, int ap, Allocation& a, int64_t cycle) {
        const WorkGroup& wg = wgs[index];
        a.wg = index;
        a.ap = ap;
        a.power = rules.wave_power[wg.channel] * wg.waves;
        res.apply(ap, a.waves, a.vgpr, a.sgpr, a.lds, wg.waves, cycle, cycle + 1 + cfg.circuit_latency, true);
    }

    void take_from_queue(int channel, int64_t index) {
        if (own) {
            own->own.take(channel, index);
            return;
        }
        if (rules.selection == 3) {
            buffer = -1;
            return;
        }
        channels[channel].pop_front();
    }

    void commit(int64_t index, int channel, int ap, Allocation a, int64_t cycle) {
        take_from_queue(channel, index);
        WorkGroup& wg = wgs[index];
        if (rules.decision_pipeline == 0) advance(channel, ap);
        matcher.chosen(ap, wg.waves);
        for (int q = 0; q < cfg.peus; ++q) peu_waves[size_t(ap) * cfg.peus + q] += a.waves[q];
        res.change_power(ap, cycle + 1, a.power);
        wg.dispatched = cycle;
        wg.ap = ap;
        event(cycle, DISPATCH, index, ap, &a.waves, &a);
        queue_dispatched(index, cycle);
        const int64_t id = wg.id;
        // The record's slot: a released one when there is one (a run holds the WGs in flight).
        int64_t slot = int64_t(allocations.size());
        if (!free_slots.empty()) {
            slot = free_slots.back();
            free_slots.pop_back();
        }
        if (shared || pooled)                  // execution_model.start
            on_shared([&](auto& model) {
                model.start(ap, a.waves, wg.waves, wg.work >= 0 ? wg.work : wg.duration, id, slot, cycle);
            });
        else
            completions.push({cycle + wg.duration + 1, id, slot});
        if (slot == int64_t(allocations.size())) allocations.push_back(std::move(a));
        else allocations[slot] = std::move(a);
        ++running_count;
    }

    void release(int64_t slot, int64_t cycle) {
        Allocation& a = allocations[slot];
        WorkGroup& wg = wgs[a.wg];
        res.apply(a.ap, a.waves, a.vgpr, a.sgpr, a.lds, wg.waves, cycle, cycle + cfg.circuit_latency, false);
        if (own) own->own.released(a);                 // matcher.released
        res.change_power(a.ap, cycle, -a.power);
        event(cycle, RELEASE, a.wg, a.ap, &a.waves, &a);
        if (wg.completed >= 0) violation("cycle " + std::to_string(cycle) + ": WG " + std::to_string(wg.id) + " completed twice");
        --running_count;
        --inflight[wg.channel];
        if (wg.dispatched < 0)
            violation("cycle " + std::to_string(cycle) + ": WG " + std::to_string(wg.id) + " completed without being dispatched");
        wg.completed = cycle - 1;
        runs.push_back(cycle - 1 - wg.dispatched);
        if (wg.parent < 0) {
            ++completed;
            finished_arrivals.push_back(wg.arrival);
            finished_releases.push_back(cycle);
            wg.done = true;
        } else {
            Parent& parent = parents.at(wg.parent);
            if (++parent.completed == parent.parts) {
                WorkGroup& p = wgs[parent.wg];
                if (p.dispatched >= 0)
                    violation("cycle " + std::to_string(cycle) + ": WG " + std::to_string(p.id) + " was dispatched whole and split");
                p.completed = cycle - 1;
                ++completed;
                finished_arrivals.push_back(p.arrival);
                finished_releases.push_back(cycle);
                p.done = true;
            }
            wg.done = true;                    // a part: nothing reads it again
        }
        allocations[slot] = Allocation{};
        wgs.reclaim();
        free_slots.push_back(slot);
    }

    // -- the one-clock decision (model.dispatch.pipeline.OneCycleDecision) --------------------
    void one_clock(int64_t cycle, bool& dispatched, bool& aborted, bool& matched, bool& waiting) {
        waiting = buffer >= 0 || any_heads();
        dispatched = aborted = false;
        ApMask mask;
        Updates updates;
        const int channel = select(cycle, mask, updates, matched);
        if (channel < 0) return;
        const int64_t index = rules.selection == 3 ? buffer : channels[channel].front();
        const int ap = choose_ap(mask, cycle, nullptr);
        Allocation a;
        if (!allocate(index, ap, cycle, a)) {
            ++stale_aborts;
            if (updates.any) lfsr.state = updates.lfsr_state;
            std::vector<int> waves = matcher.placement(wgs[index], ap);
            event(cycle, STALE_ABORT, index, ap, &waves);
            aborted = true;
            matched = true;
            return;
        }
        if (updates.any)
            for (auto [c, v] : updates.flags) set_flag(c, updates.priority, v);
        commit(index, channel, ap, std::move(a), cycle);
        dispatched = true;
        matched = true;
    }

    bool any_heads() const {
        for (const auto& q : channels)
            if (!q.empty()) return true;
        return false;
    }

    // -- the decision pipeline (model.dispatch.pipeline.DecisionPipeline) -------------------
    void scores_now(int64_t cycle, std::vector<int64_t>& resource, std::vector<int64_t>& instruction) {
        const int choice = rules.ap_choice;
        resource.assign(cfg.aps, 0);
        if (choice == 2 || choice == 4)
            for (int ap = 0; ap < cfg.aps; ++ap) resource[ap] = resource_score(ap);
        if (choice == 3 || choice == 4) instruction = res.history_scores(cycle);
        else instruction.assign(cfg.aps, 0);
    }

    // DecisionPipeline._scores: this cycle's scores, or the rotating scores' keys after this
    // cycle's refresh of AP cycle mod P and of the AP dispatched to in cycle
    // cycle - 1 - circuit_latency (RotatingScores.refresh).
    bool rotates() const {
        return rules.rotating_scores && rules.ap_choice >= 2;
    }

    __int128 kept_key(int ap) const {
        const int choice = rules.ap_choice;
        if (choice == 2) return kept_r[ap];
        if (choice == 3) return -__int128(kept_b[ap]);
        const int64_t top_r = std::max<int64_t>(*std::max_element(kept_r.begin(), kept_r.end()), 1);
        const int64_t top_b = std::max<int64_t>(*std::max_element(kept_b.begin(), kept_b.end()), 1);
        return __int128(rules.resource_weight) * kept_r[ap] * top_b -
               __int128(rules.instruction_weight) * kept_b[ap] * top_r;
    }

    Scores scores_at(int64_t cycle) {
        Scores s;
        if (!rotates()) {
            scores_now(cycle, s.resource, s.instruction);
            return s;
        }
        const int choice = rules.ap_choice;
        if (kept_keys.empty()) {               // the idle GPU's, kept before cycle 0
            scores_now(cycle, kept_r, kept_b);
            kept_keys.resize(cfg.aps);
            for (int ap = 0; ap < cfg.aps; ++ap) kept_keys[ap] = kept_key(ap);
        }
        const int64_t shown = cycle - 1 - cfg.circuit_latency;
        while (!recent_dispatches.empty() && recent_dispatches.front().first < shown)
            recent_dispatches.pop_front();
        int aps[2] = {int(cycle % cfg.aps), -1};
        if (!recent_dispatches.empty() && recent_dispatches.front().first == shown &&
            recent_dispatches.front().second != aps[0])
            aps[1] = recent_dispatches.front().second;
        std::vector<int64_t> history;
        if (choice == 3 || choice == 4) history = res.history_scores(cycle);
        for (int ap : aps) {
            if (ap < 0) continue;
            kept_r[ap] = (choice == 2 || choice == 4) ? resource_score(ap) : 0;
            kept_b[ap] = history.empty() ? 0 : history[ap];
        }
        for (int ap : aps)
            if (ap >= 0) kept_keys[ap] = kept_key(ap);
        s.keys = kept_keys;
        return s;
    }

    // RotatingScores.best: the candidate with the largest kept key, the lowest index first.
    static int best_key(const ApMask& mask, const std::vector<__int128>& keys) {
        int best = -1;
        for (size_t ap = 0; ap < keys.size(); ++ap)
            if (mask.test(int(ap)) && (best < 0 || keys[ap] > keys[best])) best = int(ap);
        return best;
    }

    Match match_stage(int64_t cycle) {
        std::vector<int> in_flight(opt.channel_count, 0);
        ApMask busy(cfg.aps);
        for (const auto& d : flight) {
            ++in_flight[d.channel];
            busy.set(d.ap);
        }
        Match m;
        m.rows.resize(opt.channel_count);
        for (int c = 0; c < opt.channel_count; ++c) {
            for (int k = 0; k < 2; ++k) {
                const size_t position = size_t(in_flight[c] + k);
                MatchRow& row = m.rows[c][k];
                if (position >= channels[c].size()) continue;
                const int64_t index = channels[c][position];
                const WorkGroup& wg = wgs[index];
                row.present = true;
                row.wg = index;
                const bool held = wg.barrier && (inflight[c] || position);
                if (held) {
                    row.mask = ApMask(cfg.aps);
                } else {
                    row.mask = matcher.mask(wg);
                    for (size_t i = 0; i < row.mask.w.size(); ++i) row.mask.w[i] &= ~busy.w[i];
                }
            }
        }
        Scores now = scores_at(cycle);
        if (ring.empty())
            for (int k = 0; k < rules.score_latency; ++k) ring.push_back(now);
        ring.push_back(std::move(now));
        take_scores(m, std::move(ring.front()));
        ring.pop_front();
        m.pointers = matcher.pointer;
        return m;
    }

    void candidates(std::vector<int>& cands, std::vector<int64_t>& cand_wg, std::vector<ApMask>& cand_mask) {
        cands.clear();
        cand_wg.clear();
        cand_mask.clear();
        const int last_ap = chosen_last >= 0 ? flight.back().ap : -1;
        std::vector<int> in_flight(opt.channel_count, 0);
        for (const auto& d : flight) ++in_flight[d.channel];
        for (int c = 0; c < opt.channel_count; ++c) {
            const MatchRow& entry = last->rows[c][chosen_last == c ? 1 : 0];
            if (entry.present && size_t(in_flight[c]) < channels[c].size() &&
                channels[c][in_flight[c]] == entry.wg) {
                ApMask m = entry.mask;
                if (last_ap >= 0) m.clear(last_ap);
                cands.push_back(c);
                cand_wg.push_back(entry.wg);
                cand_mask.push_back(std::move(m));
            }
        }
    }

    bool idle_until(bool waiting) {
        if (!flight.empty() || squash || chosen_last >= 0 || !last) return false;
        std::vector<int> cands;
        std::vector<int64_t> cand_wg;
        std::vector<ApMask> cand_mask;
        candidates(cands, cand_wg, cand_mask);
        for (const auto& m : cand_mask)
            if (m.any()) return false;
        return !cands.empty() == waiting;
    }

    // DecisionPipeline.hold: a cycle held by back-pressure; every stage keeps its WG, the
    // flight stays as far from dispatch, the scores go on through the ring.
    void pipeline_hold(int64_t cycle) {
        for (auto& d : flight) ++d.chosen;
        if (!last) return;
        ring.push_back(scores_at(cycle));
        take_scores(*last, std::move(ring.front()));
        ring.pop_front();
    }

    static void take_scores(Match& m, Scores s) {
        m.resource = std::move(s.resource);
        m.instruction = std::move(s.instruction);
        m.keys = std::move(s.keys);
    }

    // DecisionPipeline.skip; rotating scores are refreshed in the 2 P - 1 cycles before the
    // last latency + 1 too (what earlier cycles kept is overwritten by then).
    void pipeline_skip(int64_t cycle, int64_t following) {
        const int latency = rules.score_latency;
        std::deque<Scores> combined(ring.begin(), ring.end());
        const int64_t refreshed = latency + 1 + (rotates() ? 2 * int64_t(cfg.aps) - 1 : 0);
        const int64_t from = std::max(cycle + 1, following - refreshed);
        for (int64_t c = from; c < following; ++c) {
            Scores s = scores_at(c);
            if (c >= following - (latency + 1)) combined.push_back(std::move(s));
        }
        take_scores(*last, combined[combined.size() - (latency + 1)]);
        ring.clear();
        if (latency)
            for (size_t k = combined.size() - latency; k < combined.size(); ++k) ring.push_back(combined[k]);
    }

    void pipeline_step(int64_t cycle, bool& dispatched, bool& aborted, int& matched, bool& waiting) {
        const int k = rules.decision_pipeline;
        Match match = match_stage(cycle);
        if (!flight.empty() && flight.back().chosen + 1 == cycle) {
            Decision& d = flight.back();
            d.planned = plan(res, d.ap, d.waves, wgs[d.wg].vgpr, wgs[d.wg].sgpr, wgs[d.wg].lds, d.vgpr, d.sgpr, d.lds);
        }
        dispatched = aborted = false;
        if (!flight.empty() && flight.front().chosen + k == cycle) {
            Decision d = std::move(flight.front());
            flight.pop_front();
            if (d.planned) {
                if (!still_free(res, d.ap, d.waves, d.vgpr, d.sgpr, d.lds))
                    violation("cycle " + std::to_string(cycle) + ": WG " + std::to_string(wgs[d.wg].id) +
                              "'s first fit on AP " + std::to_string(d.ap) + " went stale in flight");
                if (channels[d.channel].empty() || channels[d.channel].front() != d.wg)
                    violation("cycle " + std::to_string(cycle) + ": WG " + std::to_string(wgs[d.wg].id) +
                              " dispatched before the WGs ahead of it in channel " + std::to_string(d.channel));
                Allocation a;
                a.waves = d.waves;
                a.vgpr = d.vgpr;
                a.sgpr = d.sgpr;
                a.lds = d.lds;
                take(d.wg, d.ap, a, cycle);
                commit(d.wg, d.channel, d.ap, std::move(a), cycle);
                if (rotates()) recent_dispatches.push_back({cycle, d.ap});
                dispatched = true;
            } else {
                ++stale_aborts;
                flushed += int64_t(flight.size());
                event(cycle, STALE_ABORT, d.wg, d.ap, &d.waves);
                flight.clear();
                squash = 2;
                aborted = true;
            }
        }
        matched = -1;
        waiting = false;
        int chosen = -1;
        if (squash) {
            --squash;
        } else if (last) {
            std::vector<int> cands;
            std::vector<int64_t> cand_wg;
            std::vector<ApMask> cand_mask;
            candidates(cands, cand_wg, cand_mask);
            if (cands.empty()) {
                matched = 0;
            } else {
                waiting = true;
                const int c = choose(cands, cand_wg, cand_mask, cycle);
                if (c < 0) {
                    matched = 0;
                } else {
                    const size_t i = std::find(cands.begin(), cands.end(), c) - cands.begin();
                    const int ap = rotates() ? best_key(cand_mask[i], last->keys)
                                             : choose_ap(cand_mask[i], cycle, &*last);
                    advance(c, ap);
                    const int pointer = rules.rotate ? last->pointers[ap] : 0;
                    flight.push_back(Decision{cand_wg[i], c, ap, matcher.row_for(wgs[cand_wg[i]].waves, pointer), cycle});
                    chosen = c;
                    matched = 1;
                }
            }
        }
        chosen_last = chosen;
        last = std::move(match);
    }

    // -- metrics (model.dispatch.metrics.Metrics.sample / accumulate) --------------------------
    void accumulate(int64_t cycles) {
        if (cycles <= 0) return;
        for (int r = 0; r < 3; ++r) used_integral[r] += cycles * res.held_total[r];
        used_integral[3] += cycles * (total_slots() - res.slots_free);
    }
    int64_t total_slots() const { return int64_t(cfg.aps) * cfg.peus * cfg.wave_slots; }

    void sample(int64_t start, int64_t stop) {
        const int64_t interval = opt.sample_interval;
        const int64_t first = ceil_div(start, interval) * interval;
        if (first >= stop) return;
        const int P = cfg.aps, Q = cfg.peus;
        std::vector<double> used(4);
        for (int r = 0; r < 3; ++r)
            used[r] = double(res.held_total[r]) / (double(cfg.size[r]) * double(view.counts[r]));
        used[3] = 1.0 - double(res.slots_free) / double(total_slots());
        std::vector<int> dirty = res.dirty;
        if (!sampled_once) {
            sampled_once = true;
            dirty.clear();
            for (int ap = 0; ap < P; ++ap) dirty.push_back(ap);
        }
        if (!dirty.empty()) {
            const int64_t per_slots = int64_t(cfg.wave_slots) * Q;
            const int64_t vgpr_q = int64_t(Q) * cfg.size[VGPR], sgpr_q = int64_t(Q) * cfg.size[SGPR],
                          lds_n = cfg.size[LDS];
            for (int ap : dirty) {
                int64_t v = 0, s = 0;
                for (int q = 0; q < Q; ++q) {
                    v += res.held[VGPR][ap * Q + q];
                    s += res.held[SGPR][ap * Q + q];
                }
                per_ap[ap] = (true_div(v, vgpr_q) + true_div(s, sgpr_q) + true_div(res.held[LDS][ap], lds_n) +
                              true_div(per_slots - res.ap_slots[ap], per_slots)) / 4;
            }
            for (int r = 0; r < 3; ++r) {
                const int width = view.counts[r] == P * Q ? Q : 1;
                for (int ap : dirty)
                    for (int index = ap * width; index < ap * width + width; ++index) {
                        const int count = res.free[r][index];
                        if (count > 0) {
                            fragments[r][index] = 1.0 - true_div(res.largest[r][index], count);
                            fragmented[r][index] = 1;
                        } else {
                            fragmented[r][index] = 0;
                        }
                    }
            }
            for (int ap : res.dirty) res.dirty_flag[ap] = 0;
            res.dirty.clear();
            std::vector<double> all;
            for (int r = 0; r < 3; ++r)
                for (size_t i = 0; i < fragments[r].size(); ++i)
                    if (fragmented[r][i]) all.push_back(fragments[r][i]);
            fragmentation_now = all.empty() ? 0.0 : mean(all);
            resource_cv_now = coefficient_of_variation(per_ap);
        }
        const int64_t window = opt.power_window;
        const int64_t steady = res.last_power_change + window;
        const int64_t count = (stop - first + interval - 1) / interval;
        const int64_t varying = count ? std::min(count, std::max<int64_t>(0, ceil_div(steady - first, interval))) : 0;
        std::vector<double> power(P);
        for (int64_t k = 0; k < varying; ++k) {
            const int64_t at = first + k * interval;
            for (int ap = 0; ap < P; ++ap) power[ap] = double(res.history_window(ap, at, window));
            power_cv.push_back(coefficient_of_variation(power));
        }
        if (count > varying) {
            for (int ap = 0; ap < P; ++ap) power[ap] = double(res.history[ap].rates.back() * window);
            power_cv.insert(power_cv.end(), size_t(count - varying), coefficient_of_variation(power));
        }
        const double utilisation = pairwise_sum(used.data(), 4) / 4.0;
        for (int64_t k = 0; k < count; ++k) sample_cycles.push_back(first + k * interval);
        sample_used.insert(sample_used.end(), size_t(count), utilisation);
        sample_fragmentation.insert(sample_fragmentation.end(), size_t(count), fragmentation_now);
        sample_resource_cv.insert(sample_resource_cv.end(), size_t(count), resource_cv_now);
    }

    static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
    static int64_t floor_div(int64_t a, int64_t b) {
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
    }
    // Python's int / int for values below 2^53: both exact as doubles, one rounding.
    static double true_div(int64_t a, int64_t b) { return double(a) / double(b); }

    void violation(std::string message) { res.violation(std::move(message)); }

    // model.dispatch.launches.LaunchTally.record: per launch (WG ids tally_first[i] ..
    // tally_end[i] - 1) its first dispatch, last release and WGs released.
    void tally(int64_t cycle, int kind, int64_t index) {
        const WorkGroup& wg = wgs[index];
        const int64_t ident = wg.parent < 0 ? wg.id : wg.parent;
        size_t i = tally_index;
        if (!(i < tally_first.size() && tally_first[i] <= ident && ident < tally_end[i])) {
            const auto at = std::upper_bound(tally_first.begin(), tally_first.end(), ident);
            if (at == tally_first.begin() || ident >= tally_end[at - tally_first.begin() - 1]) {
                if (tally_error.empty())
                    tally_error = "event at cycle " + std::to_string(cycle) + " names WG " +
                                  std::to_string(ident) + ", which no launch made";
                return;
            }
            i = tally_index = size_t(at - tally_first.begin() - 1);
        }
        if (kind == DISPATCH) {
            if (tally_start[i] < 0 || cycle < tally_start[i]) tally_start[i] = cycle;
        } else {
            if (cycle > tally_finish[i]) tally_finish[i] = cycle;
            if (wg.parent < 0) ++tally_released[i];
        }
    }

    void event(int64_t cycle, int kind, int64_t index, int ap = -1, const std::vector<int>* waves = nullptr,
               const Allocation* a = nullptr, const std::string& reason = "") {
        if (!tally_first.empty() && (kind == DISPATCH || kind == RELEASE)) tally(cycle, kind, index);
        if (!opt.events) return;
        Event e{cycle, kind, index, ap};
        if (waves) e.waves = *waves;
        if (a) {
            e.has_starts = true;
            for (int q = 0; q < cfg.peus; ++q) {
                e.vgpr_starts.push_back(a->vgpr[q].none() ? -1 : a->vgpr[q].start);
                e.sgpr_starts.push_back(a->sgpr[q].none() ? -1 : a->sgpr[q].start);
            }
            e.lds_start = a->lds.none() ? -1 : a->lds.start;
        }
        e.reason = reason;
        events.push_back(std::move(e));
    }

    // -- the run (model.dispatch.engine.DispatchSimulator.run) --------------------------------
    void run() {
        int64_t taken = 0;                     // WGs made from the source so far
        const int64_t limit = opt.cycles;
        int64_t cycle = 0, next_sample = 0;
        const int64_t release_limit = rules.release_limit ? rules.release_limit : -1;
        while (cycle < limit) {
            // Shared: finishes before this cycle are final (no dispatch from now changes them).
            on_shared([&](auto& model) { model.finish_until(cycle - 1); });
            int64_t released = 0;
            while (!completions.empty() && std::get<0>(completions.top()) <= cycle && released != release_limit) {
                const int64_t slot = std::get<2>(completions.top());
                completions.pop();
                release(slot, cycle);
                ++released;
            }
            while (taken < submitted && source.next_arrival() == cycle) {
                ++taken;
                const int64_t index = int64_t(wgs.size());
                wgs.push_back(source.take());
                if (admit(index, cycle)) {
                    channels[wgs[index].channel].push_back(index);
                    live_order.push_back(index);
                }
            }
            if (view.pending() && view.next_visible() <= cycle) {
                changed.clear();
                view.show(cycle, changed);
                if (own && !changed.empty()) own->shown(changed);   // matcher.mark
            }
            for (int r = 0; r < 3; ++r) used_integral[r] += res.held_total[r];
            used_integral[3] += total_slots() - res.slots_free;
            bool dispatched, aborted, waiting;
            int matched;                       // -1: None (a cancelled choice)
            if (back_pressure.holding(cycle)) {   // held: steps 4 and 5 do nothing
                if (rules.decision_pipeline) pipeline_hold(cycle);
                dispatched = aborted = waiting = false;
                matched = -1;
            } else if (own) {
                bool m;
                own->step(cycle, dispatched, aborted, m, waiting);
                matched = m;
            } else if (rules.decision_pipeline) {
                pipeline_step(cycle, dispatched, aborted, matched, waiting);
            } else {
                bool m;
                one_clock(cycle, dispatched, aborted, m, waiting);
                matched = m;
            }
            back_pressure.dispatched_last = dispatched;
            ++processed_cycles;
            if (progress && (cycle >= next_progress || (processed_cycles & 0xFFFF) == 0)) {
                progress(cycle);
                next_progress = cycle + std::max<int64_t>(1, limit / 64);
            }
            dispatch_cycles += dispatched;
            bool split_now = false;
            if (splitting && matched >= 0) split_now = count_fail(matched == 1, waiting, cycle);
            const bool has_heads = buffer >= 0 || any_heads();
            const bool idle = !(dispatched || aborted || split_now);
            int64_t following = cycle + 1;
            if (idle && opt.skip && (!rules.decision_pipeline || (matched >= 0 && idle_until(waiting)))) {
                following = limit;
                if (taken < submitted && source.next_arrival() < following) following = source.next_arrival();
                if (!completions.empty() && std::get<0>(completions.top()) < following) following = std::get<0>(completions.top());
                if (view.pending() && view.next_visible() < following) following = view.next_visible();
                if (own) {                     // a baseline's own clock (its next step)
                    const int64_t woken = own->wake(cycle);
                    if (woken >= 0 && woken < following) following = woken;
                }
                const bool counting = splitting && waiting && matched == 0;
                if (counting && cycle + rules.split_threshold + 1 - g < following && splittable())
                    following = cycle + rules.split_threshold + 1 - g;
                on_shared([&](auto& model) { model.skip(following); });   // the skip's shared branch
                following = std::max(cycle + 1, following);
                if (rules.decision_pipeline && following > cycle + 1) pipeline_skip(cycle, following);
                if (counting) g = (g + following - cycle - 1) % (rules.split_threshold + 1);
            }
            if (taken >= submitted && running_count == 0 && !has_heads) {
                finished_at = cycle;
                sample(cycle, cycle + 1);
                back_pressure.after_end(cycle, limit);
                break;
            }
            const int64_t end = following < limit ? following : limit;
            if (next_sample < end) {
                sample(cycle, end);
                next_sample = ceil_div(end, opt.sample_interval) * opt.sample_interval;
            }
            accumulate(end - cycle - 1);
            cycle = following;
        }
        end_cycle = finished_at >= 0 ? finished_at : std::min(cycle, limit);
        if (own) own->finish(end_cycle);           // Metrics._buffer
    }

    // The WGs still queued at the end (FIFOs channel by channel, then the buffer), as the
    // submitted WGs they are or are parts of: indices, in order, repeats included.
    std::vector<int64_t> queued_originals() const {
        std::vector<int64_t> out;
        auto original = [&](int64_t index) {
            const WorkGroup& wg = wgs[index];
            return wg.parent < 0 ? index : parents.at(wg.parent).wg;
        };
        for (const auto& q : channels)
            for (auto index : q) out.push_back(original(index));
        if (buffer >= 0) out.push_back(original(buffer));
        return out;
    }

    // The per-cycle lists of select() and choose_ap(), kept so that an evaluated cycle
    // allocates nothing (each cleared before use; only its capacity survives a call).
    struct Scratch {
        std::vector<int> matches, priorities, candidates;
        std::vector<ApMask> masks;
        std::vector<int64_t> resource, instruction;
    } scratch;

    Config cfg;
    Rules rules;
    RunOptions opt;
    View<W> view;
    Resources<W> res;
    std::vector<int> inflight;
    Matcher<W> matcher;
    Source source;
    WgTable wgs;                           // the WGs arrived so far and the split parts
    int64_t submitted;
    std::vector<std::deque<int64_t>> channels;
    std::vector<int64_t> last_dispatched;
    std::vector<char> selected;
    std::vector<int64_t> peu_waves;
    Lfsr lfsr{1};
    int ap_pointer = 0, channel_pointer = 0;
    int64_t buffer = -1;
    int64_t next_id = 0, g = 0;
    bool splitting = false;
    std::unordered_map<int64_t, Parent> parents;
    std::vector<Rejection> rejected;
    Completions completions;
    std::optional<SharedExecution<int64_t>> shared;     // execution = "shared"
    std::optional<SharedExecution<__int128>> pooled;    // and units "ap_range" (PooledExecution)
    // Calls f with the shared-issue model, if the run has one.
    template <class F>
    void on_shared(F&& f) {
        if (shared) f(*shared);
        else if (pooled) f(*pooled);
    }
    BackPressure back_pressure;                // dispatch_ready
    std::vector<Allocation> allocations;   // the running WGs' records, by slot
    std::vector<int64_t> free_slots;
    int64_t running_count = 0;
    std::vector<int64_t> live_order;
    std::vector<int> changed;
    // the decision pipeline
    std::deque<Decision> flight;
    std::optional<Match> last;
    int chosen_last = -1, squash = 0;
    std::deque<Scores> ring;
    // Rotating scores (model.dispatch.scores): every AP's kept R, B and key, and the recent
    // dispatches' (cycle, AP).
    std::vector<int64_t> kept_r, kept_b;
    std::vector<__int128> kept_keys;
    std::deque<std::pair<int64_t, int>> recent_dispatches;
    // counters and metrics
    int64_t stale_aborts = 0, flushed = 0, splits = 0, sub_workgroups = 0, dispatch_cycles = 0,
            processed_cycles = 0, completed = 0;
    std::vector<int64_t> wait_priorities, wait_channels, wait_cycles, wait_arrivals;
    std::vector<int64_t> finished_arrivals, finished_releases, runs;
    int64_t used_integral[4] = {0, 0, 0, 0};
    std::vector<int64_t> sample_cycles;
    std::vector<double> sample_used, sample_fragmentation, sample_resource_cv, power_cv;
    std::vector<double> per_ap, fragments[3];
    std::vector<char> fragmented[3];
    double fragmentation_now = 0.0, resource_cv_now = 0.0;
    bool sampled_once = false;
    std::vector<Event> events;
    // A launch tally instead of the event rows (empty: none).
    std::vector<int64_t> tally_first, tally_end, tally_start, tally_finish, tally_released;
    size_t tally_index = 0;
    std::string tally_error;
    int64_t finished_at = -1, end_cycle = 0;
    // Called with the cycle about 64 times a run, at least every 65,536 evaluated cycles
    // (the progress bar; Ctrl-C).
    std::function<void(int64_t)> progress;
    int64_t next_progress = 0;
    std::unique_ptr<Faithful<Engine, W>> own;       // a faithful baseline (faithful.hpp)
};

}  // namespace core

// The compiled core's Python module, model.dispatch.core._core (issue 32): built by
// `make venv` with the system's g++ (model/dispatch/core/build.py). It binds the run of the
// compiled engine (`run`: the raw record model/dispatch/core/engine.py turns into the Python
// model's result) and, for the tests that hold each to its Python twin, the free-block
// functions of model/maxblock.py and the view with the resource table (`Table<W>`).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <structmember.h>

#include <algorithm>
#include <utility>

#include <stdexcept>
#include <string>
#include <unordered_set>

#include "bits.hpp"
#include "engine.hpp"
#include "resources.hpp"

namespace py = pybind11;

namespace {

// The words a status word of n blocks needs, rounded up to a power of two (1 .. 64).
int words_for(int n) {
    if (n < 1 || n > 4096)
        throw std::invalid_argument("a status word has 1 .. 4096 blocks, not " +
                                    std::to_string(n));
    int words = 1;
    while (words * 64 < n) words <<= 1;
    return words;
}

template <int W>
core::Bits<W> from_int(const py::int_& value) {
    py::bytes raw = value.attr("to_bytes")(8 * W, "little");
    const std::string text = raw;
    core::Bits<W> bits;
    for (int i = 0; i < W; ++i) {
        uint64_t word = 0;
        for (int b = 7; b >= 0; --b) word = (word << 8) | static_cast<unsigned char>(text[8 * i + b]);
        bits.w[i] = word;
    }
    return bits;
}

template <int W>
py::int_ to_int(const core::Bits<W>& bits) {
    std::string text(8 * W, '\0');
    for (int i = 0; i < W; ++i)
        for (int b = 0; b < 8; ++b) text[8 * i + b] = static_cast<char>(bits.w[i] >> (8 * b));
    return py::int_(py::module_::import("builtins").attr("int").attr("from_bytes")(
        py::bytes(text), "little"));
}

core::Placed placed_of(const py::handle& value) {
    if (value.is_none()) return {};
    auto pair = value.cast<std::pair<int, int>>();
    return {pair.first, pair.second};
}

std::vector<core::Placed> plan_of(const py::sequence& values) {
    std::vector<core::Placed> out;
    for (const auto& value : values) out.push_back(placed_of(value));
    return out;
}

py::object py_placed(core::Placed p) {
    return p.none() ? py::object(py::none()) : py::object(py::make_tuple(p.start, p.length));
}

// The view and the resource table of one configuration, for the tests that hold them to
// model.dispatch.views.View and model.dispatch.resources.Resources.
template <int W>
struct Table {
    explicit Table(const core::Config& c) : cfg(c), view(cfg), resources(cfg, view) {}
    core::Config cfg;
    core::View<W> view;
    core::Resources<W> resources;

    py::int_ show(int64_t cycle) {
        std::vector<int> changed;
        view.show(cycle, changed);
        py::int_ mask(0);
        for (int ap : changed) mask = py::int_(mask | (py::int_(1) << py::int_(ap)));
        return mask;
    }

    py::dict state() const {
        py::dict out;
        const char* names[] = {"vgpr", "sgpr", "lds"};
        py::dict bits, largest, free, held, held_total, views;
        for (int r = 0; r < 3; ++r) {
            py::list words;
            for (const auto& word : resources.bits[r]) words.append(to_int<W>(word));
            bits[names[r]] = words;
            largest[names[r]] = resources.largest[r];
            free[names[r]] = resources.free[r];
            held[names[r]] = resources.held[r];
            held_total[names[r]] = resources.held_total[r];
            views[names[r]] = view.view[r];
        }
        out["bits"] = bits;
        out["largest"] = largest;
        out["free"] = free;
        out["held"] = held;
        out["held_total"] = held_total;
        out["view"] = views;
        out["view_sum"] = py::dict(py::arg("vgpr") = view.view_sum[0],
                                   py::arg("sgpr") = view.view_sum[1]);
        out["slots"] = resources.slots;
        out["ap_slots"] = resources.ap_slots;
        out["slots_free"] = resources.slots_free;
        out["pending"] = view.pending_count();
        out["power"] = resources.power;
        out["ema"] = resources.ema;
        out["last_power_change"] = resources.last_power_change;
        out["violations"] = resources.violations;
        std::vector<int> dirty = resources.dirty;
        std::sort(dirty.begin(), dirty.end());
        out["dirty"] = dirty;
        return out;
    }
};

template <int W>
void bind_table(py::module_& m, const char* name) {
    using T = Table<W>;
    py::class_<T>(m, name)
        .def(py::init<const core::Config&>())
        .def("change", [](T& t, int r, int index, int start, int length, int64_t cycle,
                          int64_t visible, bool take) {
            t.resources.change(r, index, {start, length}, cycle, visible, take);
        })
        .def("apply", [](T& t, int ap, std::vector<int> peu_waves, py::sequence vgpr,
                         py::sequence sgpr, py::object lds, int waves, int64_t cycle,
                         int64_t visible, bool take) {
            t.resources.apply(ap, peu_waves, plan_of(vgpr), plan_of(sgpr), placed_of(lds),
                              waves, cycle, visible, take);
        })
        .def("show", &T::show)
        .def("state", &T::state)
        .def("clear_dirty", [](T& t) {
            for (int ap : t.resources.dirty) t.resources.dirty_flag[ap] = 0;
            t.resources.dirty.clear();
        })
        .def("idle_length", [](const T& t, int r) { return t.view.idle_length(r); })
        .def("change_power", [](T& t, int ap, int64_t cycle, int64_t delta) {
            t.resources.change_power(ap, cycle, delta);
        })
        .def("history_scores", [](T& t, int64_t cycle) { return t.resources.history_scores(cycle); })
        .def("history_window", [](const T& t, int ap, int64_t cycle, int64_t length) {
            return t.resources.history_window(ap, cycle, length);
        })
        .def("plan", [](const T& t, int ap, std::vector<int> peu_waves, int vgpr, int sgpr,
                        int lds) -> py::object {
            std::vector<core::Placed> v, s;
            core::Placed l;
            if (!core::plan(t.resources, ap, peu_waves, vgpr, sgpr, lds, v, s, l))
                return py::none();
            py::list vp, sp;
            for (auto p : v) vp.append(py_placed(p));
            for (auto p : s) sp.append(py_placed(p));
            return py::make_tuple(vp, sp, py_placed(l));
        })
        .def("still_free", [](const T& t, int ap, std::vector<int> peu_waves, py::sequence vgpr,
                              py::sequence sgpr, py::object lds) {
            return core::still_free(t.resources, ap, peu_waves, plan_of(vgpr), plan_of(sgpr),
                                    placed_of(lds));
        });
}

// One run of the compiled engine: the raw record model/dispatch/core/__init__.py turns into
// the Python model's result (model.dispatch.metrics.Metrics.results).
template <int W>
py::dict run_engine(const core::Config& config, const core::Rules& rules,
                    const core::RunOptions& options, const py::dict& columns, int64_t submitted,
                    int64_t total, const py::object& progress, const py::object& tally) {
    if (options.back_pressure && int64_t(options.ready.size()) < options.cycles)
        throw std::invalid_argument("set_ready needs a byte for every cycle below the limit");
    // The launches: per launch its first WG (`templates`, WorkGroup objects, their fields
    // read here: no Python object per field) and the count (64-bit integers, array("q")).
    const py::list templates = columns["templates"];
    const py::buffer_info counts = columns["count"].cast<py::buffer>().request();
    if (counts.itemsize != sizeof(int64_t) || counts.ndim != 1 ||
        counts.shape[0] != py::ssize_t(templates.size()))
        throw std::invalid_argument("columns: a 64-bit count per template expected");
    const auto* count = static_cast<const int64_t*>(counts.ptr);
    static const char* names[] = {"id", "channel", "priority", "waves", "vgpr", "sgpr", "lds",
                                  "duration", "independent", "arrival", "parent", "work",
                                  "barrier", "grid"};
    py::object name_objects[std::size(names)];
    for (size_t f = 0; f < std::size(names); ++f) name_objects[f] = py::str(names[f]);
    // WorkGroup is a slotted dataclass: its fields are read at their slots' offsets (its
    // member descriptors'), a WG of another type by getattr.
    PyTypeObject* slotted = templates.empty() ? nullptr : Py_TYPE(templates[0].ptr());
    Py_ssize_t offsets[std::size(names)];
    for (size_t f = 0; f < std::size(names) && slotted; ++f) {
        PyObject* found = _PyType_Lookup(slotted, name_objects[f].ptr());   // borrowed
        if (found && Py_IS_TYPE(found, &PyMemberDescr_Type) &&
            reinterpret_cast<PyMemberDescrObject*>(found)->d_member->type == T_OBJECT_EX)
            offsets[f] = reinterpret_cast<PyMemberDescrObject*>(found)->d_member->offset;
        else
            slotted = nullptr;
    }
    core::Source source;
    source.templates.resize(templates.size());
    source.counts.assign(count, count + templates.size());
    int64_t value[std::size(names)];
    for (size_t i = 0; i < templates.size(); ++i) {
        PyObject* made = templates[i].ptr();
        const bool direct = Py_TYPE(made) == slotted;
        for (size_t f = 0; f < std::size(names); ++f) {
            // A field that is None (parent, work, grid) is -1; a bool is 0 or 1.
            PyObject* field = direct ? *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(made) + offsets[f])
                                     : nullptr;
            py::object owned;
            if (!field) {                       // another type, or an unset slot (AttributeError)
                owned = py::reinterpret_steal<py::object>(PyObject_GetAttr(made, name_objects[f].ptr()));
                if (!owned) throw py::error_already_set();
                field = owned.ptr();
            }
            if (field == Py_None) {
                value[f] = -1;
                continue;
            }
            value[f] = PyLong_AsLongLong(field);
            if (value[f] == -1 && PyErr_Occurred()) throw py::error_already_set();
        }
        auto& wg = source.templates[i];
        wg.id = value[0];
        wg.channel = int(value[1]);
        wg.priority = int(value[2]);
        wg.waves = int(value[3]);
        wg.vgpr = int(value[4]);
        wg.sgpr = int(value[5]);
        wg.lds = int(value[6]);
        wg.duration = value[7];
        wg.independent = value[8];
        wg.arrival = value[9];
        wg.parent = value[10];
        wg.work = value[11];
        wg.barrier = value[12];
        wg.grid = value[13];
    }
    auto engine = std::make_unique<core::Engine<W>>(config, rules, options, std::move(source), submitted);
    engine->next_id = total;
    if (!tally.is_none()) {
        auto& e = *engine;
        e.tally_first = tally.attr("_firsts").cast<std::vector<int64_t>>();
        e.tally_end = tally.attr("_ends").cast<std::vector<int64_t>>();
        e.tally_start.assign(e.tally_first.size(), -1);
        e.tally_finish.assign(e.tally_first.size(), 0);
        e.tally_released.assign(e.tally_first.size(), 0);
    }
    if (!progress.is_none())
        engine->progress = [&progress](int64_t cycle) {
            py::gil_scoped_acquire acquire;
            progress(cycle);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        };
    {
        py::gil_scoped_release release;
        engine->run();
    }
    auto& e = *engine;
    py::dict out;
    out["cycles"] = e.end_cycle;
    out["finished_at"] = e.finished_at;
    out["counters"] = py::dict(py::arg("stale_aborts") = e.stale_aborts, py::arg("flushed") = e.flushed,
                               py::arg("splits") = e.splits, py::arg("sub_workgroups") = e.sub_workgroups,
                               py::arg("dispatch_cycles") = e.dispatch_cycles,
                               py::arg("processed_cycles") = e.processed_cycles);
    out["violations"] = e.res.violations;
    int64_t decisions = 0, rejections = 0;          // MIAOW's (Metrics._buffer), else None
    out["buffer"] = e.own && e.own->buffer(decisions, rejections)
                        ? py::object(py::dict(py::arg("decisions") = decisions, py::arg("rejections") = rejections))
                        : py::object(py::none());
    out["completed"] = e.completed;
    // The per-WG columns as the bytes of 64-bit integers (array("q") reads them): a whole
    // trace has millions, which as Python integers would take gigabytes.
    auto raw = [](const std::vector<int64_t>& v) {
        return py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
    };
    out["wait"] = py::make_tuple(raw(e.wait_priorities), raw(e.wait_channels), raw(e.wait_cycles),
                                 raw(e.wait_arrivals));
    out["finished"] = py::make_tuple(raw(e.finished_arrivals), raw(e.finished_releases));
    out["runs"] = raw(e.runs);
    out["peu_waves"] = e.peu_waves;
    out["used_integral"] = std::vector<int64_t>(e.used_integral, e.used_integral + 4);
    out["samples"] = py::dict(py::arg("cycle") = e.sample_cycles, py::arg("utilisation") = e.sample_used,
                              py::arg("fragmentation") = e.sample_fragmentation,
                              py::arg("ap_resource_cv") = e.sample_resource_cv,
                              py::arg("ap_power_cv") = e.power_cv);
    py::list rejected;
    for (const auto& r : e.rejected)
        rejected.append(py::dict(py::arg("id") = r.id, py::arg("channel") = r.channel,
                                 py::arg("arrival") = r.arrival, py::arg("reason") = r.reason));
    out["rejections"] = rejected;
    // The arrival cycles of the WGs admitted and not completed, in arrival order (Metrics.
    // _open_arrivals), and the waits of the submitted WGs still queued whole or in parts,
    // each once, in queue order (Metrics._add_waiting): priority, channel, wait, arrival.
    std::vector<int64_t> open_arrivals;
    for (auto index : e.live_order)
        if (e.wgs.held(index) && !e.wgs[index].done) open_arrivals.push_back(e.wgs[index].arrival);
    std::vector<int64_t> queued_priorities, queued_channels, queued_waits, queued_arrivals;
    std::unordered_set<int64_t> waiting_ids;
    for (auto index : e.queued_originals()) {
        const auto& wg = e.wgs[index];
        if (!waiting_ids.insert(wg.id).second) continue;
        queued_priorities.push_back(wg.priority);
        queued_channels.push_back(wg.channel);
        queued_waits.push_back(e.end_cycle - wg.arrival);
        queued_arrivals.push_back(wg.arrival);
    }
    out["live"] = raw(open_arrivals);
    out["queued"] = py::make_tuple(raw(queued_priorities), raw(queued_channels), raw(queued_waits),
                                   raw(queued_arrivals));
    // With the event log: every WG of the run, by index, as the log's rows name them.
    py::list table;
    if (options.events)
        for (const auto& wg : e.wgs)
            table.append(py::make_tuple(wg.id, wg.channel, wg.priority, wg.waves, wg.vgpr, wg.sgpr,
                                        wg.lds, wg.duration, wg.independent, wg.arrival, wg.parent,
                                        wg.work, wg.barrier, wg.grid, wg.dispatched, wg.completed,
                                        wg.ap));
    out["table"] = table;
    if (!tally.is_none())
        out["tally"] = py::make_tuple(e.tally_start, e.tally_finish, e.tally_released, e.tally_error);
    py::list events;
    for (const auto& ev : e.events) {
        py::object waves_ = ev.waves.empty() && ev.kind != core::DISPATCH && ev.kind != core::RELEASE &&
                                    ev.kind != core::STALE_ABORT
                                ? py::object(py::none())
                                : py::object(py::cast(ev.waves));
        py::object starts = py::none();
        if (ev.has_starts) {
            auto opt = [](int v) { return v < 0 ? py::object(py::none()) : py::object(py::int_(v)); };
            py::list v, s;
            for (int x : ev.vgpr_starts) v.append(opt(x));
            for (int x : ev.sgpr_starts) s.append(opt(x));
            starts = py::make_tuple(v, s, opt(ev.lds_start));
        }
        events.append(py::make_tuple(ev.cycle, ev.kind, ev.wg, ev.ap < 0 ? py::object(py::none()) : py::object(py::int_(ev.ap)),
                                     waves_, starts, ev.reason.empty() ? py::object(py::none()) : py::object(py::str(ev.reason))));
    }
    out["events"] = events;
    out["held_cycles"] = e.back_pressure.held;
    return out;
}

// Calls f.template operator()<W>() with the W that n blocks need.
template <typename F>
auto by_width(int n, F&& f) {
    switch (words_for(n)) {
        case 1: return f.template operator()<1>();
        case 2: return f.template operator()<2>();
        case 4: return f.template operator()<4>();
        case 8: return f.template operator()<8>();
        case 16: return f.template operator()<16>();
        case 32: return f.template operator()<32>();
        default: return f.template operator()<64>();
    }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "The dispatcher model's compiled core (issue 32): the engine's run, and the "
              "free-block functions and resource table its tests hold to the Python model";
    m.def("longest_run", [](const py::int_& free, int n) {
        return by_width(n, [&]<int W>() { return core::longest_run(from_int<W>(free)); });
    }, py::arg("free"), py::arg("n"),
          "model.maxblock.longest_run_unchecked of an n-block word (1 = free)");
    m.def("first_fit", [](const py::int_& free, int n, int request) -> py::object {
        if (request < 1) throw std::invalid_argument("request must be >= 1");
        const int start = by_width(
            n, [&]<int W>() { return core::first_fit(from_int<W>(free), request); });
        return start < 0 ? py::object(py::none()) : py::object(py::int_(start));
    }, py::arg("free"), py::arg("n"), py::arg("request"),
          "model.maxblock.first_fit_unchecked: the lowest start of a free run, or None");
    m.def("grouped_run", [](const py::int_& free, int n, int groups) {
        if (groups < 1 || n % groups)
            throw std::invalid_argument("groups must divide n");
        return by_width(n,
                        [&]<int W>() { return core::grouped_run(from_int<W>(free), n, groups); });
    }, py::arg("free"), py::arg("n"), py::arg("groups"),
          "model.maxblock.grouped_run_unchecked");

    py::class_<core::Config>(m, "Config", "What a run needs of GpuConfig and PolicyConfig")
        .def(py::init<>())
        .def_readwrite("aps", &core::Config::aps)
        .def_readwrite("peus", &core::Config::peus)
        .def_readwrite("wave_slots", &core::Config::wave_slots)
        .def_readwrite("priorities", &core::Config::priorities)
        .def_readwrite("circuit", &core::Config::circuit)
        .def_readwrite("group_size", &core::Config::group_size)
        .def_readwrite("circuit_latency", &core::Config::circuit_latency)
        .def_readwrite("shared_periods", &core::Config::shared_periods)
        .def_readwrite("ema_history", &core::Config::ema_history)
        .def_readwrite("history_cycles", &core::Config::history_cycles)
        .def_readwrite("power_window", &core::Config::power_window)
        .def("set_resource", [](core::Config& c, int r, int size, std::vector<int> samples,
                                std::vector<int> periods) {
            if (r < 0 || r > 2) throw std::invalid_argument("resource is 0, 1 or 2");
            c.size[r] = size;
            c.samples[r] = std::move(samples);
            c.shared_period[r] = std::move(periods);
        }, py::arg("resource"), py::arg("size"), py::arg("samples"), py::arg("periods"));
    py::class_<core::Rules>(m, "Rules", "The policy fields the decision reads")
        .def(py::init<>())
        .def_readwrite("selection", &core::Rules::selection)
        .def_readwrite("ap_choice", &core::Rules::ap_choice)
        .def_readwrite("units", &core::Rules::units)
        .def_readwrite("resource_weight", &core::Rules::resource_weight)
        .def_readwrite("instruction_weight", &core::Rules::instruction_weight)
        .def_readwrite("rotate", &core::Rules::rotate)
        .def_readwrite("combined_all", &core::Rules::combined_all)
        .def_readwrite("windows", &core::Rules::windows)
        .def_readwrite("split_threshold", &core::Rules::split_threshold)
        .def_readwrite("lfsr_seed", &core::Rules::lfsr_seed)
        .def_readwrite("release_limit", &core::Rules::release_limit)
        .def_readwrite("decision_pipeline", &core::Rules::decision_pipeline)
        .def_readwrite("score_latency", &core::Rules::score_latency)
        .def_readwrite("rotating_scores", &core::Rules::rotating_scores)
        .def_readwrite("wave_power", &core::Rules::wave_power)
        .def_readwrite("circuit_name", &core::Rules::circuit_name)
        .def_readwrite("least_loaded", &core::Rules::least_loaded)
        .def("set_resource_weights", [](core::Rules& r, std::vector<int64_t> w) {
            if (w.size() != 4) throw std::invalid_argument("four resource weights");
            for (int i = 0; i < 4; ++i) r.resource_weights[i] = w[i];
        });
    py::class_<core::RunOptions>(m, "RunOptions")
        .def(py::init<>())
        .def_readwrite("cycles", &core::RunOptions::cycles)
        .def_readwrite("warmup", &core::RunOptions::warmup)
        .def_readwrite("sample_interval", &core::RunOptions::sample_interval)
        .def_readwrite("power_window", &core::RunOptions::power_window)
        .def_readwrite("channel_count", &core::RunOptions::channel_count)
        .def_readwrite("skip", &core::RunOptions::skip)
        .def_readwrite("events", &core::RunOptions::events)
        .def_readwrite("shared", &core::RunOptions::shared)
        .def_readwrite("issue_width", &core::RunOptions::issue_width)
        .def_readwrite("drain", &core::RunOptions::drain)
        .def("set_ready", [](core::RunOptions& o, const py::bytes& ready) {
            const std::string text = ready;
            o.back_pressure = true;
            o.ready.assign(text.begin(), text.end());
        }, "Back-pressure: byte c is dispatch_ready(c) (0 or 1) for every cycle c < cycles");
    m.def("run", [](const core::Config& config, const core::Rules& rules, const core::RunOptions& options,
                    const py::dict& columns, int64_t submitted, int64_t total, const py::object& progress,
                    const py::object& tally) {
        const int n = std::max({config.size[0], config.size[1], config.size[2]});
        return by_width(n, [&]<int W>() {
            return run_engine<W>(config, rules, options, columns, submitted, total, progress, tally);
        });
    }, py::arg("config"), py::arg("rules"), py::arg("options"), py::arg("columns"),
          py::arg("submitted"), py::arg("total"), py::arg("progress") = py::none(),
          py::arg("tally") = py::none(),
          "One run of the compiled engine: the raw record of its result; progress(cycle) is "
          "called about 64 times a run (and Ctrl-C stops the run there)");
    m.def("words_for", &words_for, "64-bit words per status word of n blocks");
    bind_table<1>(m, "Table1");
    bind_table<2>(m, "Table2");
    bind_table<4>(m, "Table4");
    bind_table<8>(m, "Table8");
    bind_table<16>(m, "Table16");
    bind_table<32>(m, "Table32");
    bind_table<64>(m, "Table64");
}

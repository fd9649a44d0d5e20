"""The Alibaba GPU trace v2023 readers: every file format as published (node lists, 11-column
pod lists, 5-column multigpu pod lists), every GPU model of the v2023 node list, and every bad
input reported with file, line and column; nothing dropped without a count.

The files in tests/data are small synthetic files in the trace's formats (not excerpts).
Expected values are worked out by hand from those files.
"""

from pathlib import Path

import pytest

from model.cli import main
from model.cluster.config import TraceSource, load_scenario
from model.cluster.power import BUILTIN_CARD_TYPES, BUILTIN_HOSTS
from model.cluster.synthetic import (
    V2023_NODES,
    alibaba_jobs,
    alibaba_nodes,
    write_node_list,
    write_pod_list,
)
from model.cluster.trace import (
    CPU_ONLY_NODE,
    ROUNDED_SHARED,
    SKIP_BEYOND_LIMIT,
    SKIP_CPU_ONLY,
    SKIP_NEVER_RAN,
    SKIP_QUICK_NODES,
    SKIP_SHARED,
    TraceError,
    pod_list_format,
    read_nodes,
    read_pods,
)
from model.cluster.workload import Job
from model.config import ConfigError

DATA = Path(__file__).resolve().parent / "data"
PODS = DATA / "alibaba_pods_sample.csv"
MULTIGPU = DATA / "alibaba_pods_multigpu_sample.csv"
NODES = DATA / "alibaba_nodes_sample.csv"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time\n")
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
#: Every GPU model of the published v2023 node list.
V2023_MODELS = {"G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10"}


def write(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    return path


def source(path, **options):
    return TraceSource(pods=path, **options)


def test_sample_node_list_has_every_v2023_model():
    # 16 rows: 14 GPU nodes with 2+2+8+8+8+8+8+2+2+2+8+4+8+1 = 71 GPUs, two CPU-only nodes
    # (model empty, and "nan" as the published file writes it).
    nodes, notes = read_nodes(NODES, BUILTIN_CARD_TYPES, BUILTIN_HOSTS, source(NODES))
    assert len(nodes) == 16 and sum(len(node.cards) for node in nodes) == 71
    assert notes == {CPU_ONLY_NODE: 2}
    assert {card for node in nodes for card in node.cards} == V2023_MODELS
    # openb-node-0000: 2 P100 on 64 vCPUs = 32 cores of E5-2682 v4 (16 a socket): 2 sockets
    # of 120 W busy, 15 W idle (PWR's table); host standby 15 W.
    first = nodes[0]
    assert (first.name, first.cards, first.cpu_milli, first.memory_mib) == \
        ("openb-node-0000", ("P100", "P100"), 64000, 262144)
    assert (first.cpu_busy_w, first.cpu_standby_w, first.sleep_w,
            first.cores_per_socket) == (120.0, 15.0, 15.0, 16)
    assert nodes[5].cards == () and nodes[15].cards == ()


def test_every_v2023_model_has_a_sourced_power_entry():
    for model in V2023_MODELS:
        entry = BUILTIN_CARD_TYPES[model]
        assert entry.busy_w > entry.idle_w > entry.standby_w > 0 and entry.source
        assert entry.host in BUILTIN_HOSTS
    # Undisclosed codes say so; vendor parts cite the datasheet.
    assert "undisclosed" in BUILTIN_CARD_TYPES["G2"].source
    assert "datasheet" in BUILTIN_CARD_TYPES["T4"].source


def test_unknown_model_names_the_known_ones_and_how_to_add_one(tmp_path):
    path = write(tmp_path, NODE_HEADER + "n0,1000,1024,8,H100\n", "nodes.csv")
    with pytest.raises(TraceError) as error:
        read_nodes(path, BUILTIN_CARD_TYPES, BUILTIN_HOSTS, source(path))
    message = str(error.value)
    assert "line 2 (node 'n0'), column 'model': GPU type 'H100' has no [card_types.H100]" \
        in message
    assert "known: A10, A100, G1, G2, G3, P100, T4, V100M16, V100M32" in message
    assert "add [card_types.H100] with busy_w, idle_w and standby_w" in message


def test_scenario_card_type_adds_a_model(tmp_path):
    nodes_path = write(tmp_path, NODE_HEADER + "n0,16000,65536,4,H100\n", "nodes.csv")
    pods_path = write(tmp_path, POD_HEADER + "p,1000,1024,1,1000,,LS,Running,1,9,1\n",
                      "pods.csv")
    scenario = write(tmp_path, f"""
[card_types.H100]
busy_w = 700.0
idle_w = 60.0
standby_w = 30.0
host = "Intel-Xeon-8369B"

[trace]
pods = "{pods_path.name}"
nodes = "{nodes_path.name}"
""", "s.toml")
    loaded = load_scenario(scenario)
    nodes, _ = read_nodes(nodes_path, loaded.card_types, loaded.hosts, loaded.trace)
    assert nodes[0].cards == ("H100",) * 4 and nodes[0].cpu_busy_w == 270.0


@pytest.mark.parametrize("text, message", [
    (NODE_HEADER + "n0,1000,1024,8,T4\nn0,1000,1024,8,T4\n",
     "line 3 (node 'n0'), column 'sn': names a node twice (first on line 2)"),
    (NODE_HEADER + "n0,1000,1024,8,\n", "column 'model': must name the GPU type"),
    (NODE_HEADER + "n0,1000,1024,0,T4\n", "names GPU model 'T4' for a node with gpu = 0"),
    (NODE_HEADER + "n0,1000,1024,-1,T4\n",
     "column 'gpu': must be an integer in 0..1024, not '-1'"),
    (NODE_HEADER + "n0,0,1024,1,T4\n",
     "column 'cpu_milli': must be an integer in 1..1000000000, not '0'"),
    ("sn,cpu_milli,memory_mib,gpus,model\n", "line 1: missing column 'gpu'"),
    (NODE_HEADER + "n0,1000,1024,0,\n", "no GPU node in the node list"),
    (NODE_HEADER, "has a header but no node rows"),
    (NODE_HEADER + "n0,1000,1024,1,T4,extra\n", "the row has 6 fields, the header 5"),
    (NODE_HEADER + "n0,1000,1024\n", "column 'gpu': is missing"),
    (NODE_HEADER + "n0,64000,262144,99999999999999999999,P100\n",
     "line 2 (node 'n0'), column 'gpu': must be an integer in 0..1024, "
     "not '99999999999999999999'"),
    (NODE_HEADER + "n0,64000,1000000001,8,P100\n",
     "column 'memory_mib': must be an integer in 1..1000000000, not '1000000001'"),
])
def test_malformed_node_lists_name_file_row_and_column(tmp_path, text, message):
    path = write(tmp_path, text, "nodes.csv")
    with pytest.raises(TraceError) as error:
        read_nodes(path, BUILTIN_CARD_TYPES, BUILTIN_HOSTS, source(path))
    assert message in str(error.value) and str(path) in str(error.value)


def test_sample_pod_list_timed():
    # 80 rows: 6 never ran; 74 pods of which 5 CPU-only and 28 sharing a card.
    jobs, counts = read_pods(PODS, source(PODS))
    assert len(jobs) == 74 and counts == {SKIP_NEVER_RAN: 6}
    assert sum(job.cards == 0 for job in jobs) == 5 and sum(job.shared for job in jobs) == 28
    # Pod 0000: 4 GPUs, 44 vCPUs, 176 GiB, created 9437856, ran 9437856..9445120 (7264 s);
    # pod 0001: 8 V100M16|V100M32 created 47 s later, ran 9437933..9445285 (7352 s); pod 0002
    # shares a card: 220 milli, 12 vCPUs, 48 GiB.
    assert jobs[0] == Job(0, "openb-pod-0000", 0.0, 4, 7264.0, None, 44000, 180224, 1000)
    assert jobs[1] == Job(1, "openb-pod-0001", 47.0, 8, 7352.0,
                          frozenset({"V100M16", "V100M32"}), 88000, 180224, 1000)
    assert jobs[2].shared and (jobs[2].gpu_milli, jobs[2].cpu_milli) == (220, 12000)


def test_multigpu_five_column_list_runs_only_inflation():
    # 40 rows, no times: 9 CPU-only, 15 one-card, 9 sharing, 2 + 2 + 3 on 2, 4, 8 cards.
    assert pod_list_format(MULTIGPU) == "untimed" and pod_list_format(PODS) == "timed"
    jobs, counts = read_pods(MULTIGPU, source(MULTIGPU), timed=False)
    assert len(jobs) == 40 and not counts
    assert all(job.arrival_s is None for job in jobs)
    by_cards = {k: sum(job.cards == k and not job.shared for job in jobs) for k in (0, 1, 2, 4,
                                                                                    8)}
    assert by_cards == {0: 9, 1: 15, 2: 2, 4: 2, 8: 3}
    assert sum(job.shared for job in jobs) == 9
    with pytest.raises(TraceError, match='has no times .* experiment = "inflation"'):
        read_pods(MULTIGPU, source(MULTIGPU))


def test_inflation_reads_every_pod_of_a_timed_list():
    # The inflation experiment has no times: pods that never ran are pods too (80 rows).
    jobs, counts = read_pods(PODS, source(PODS), timed=False)
    assert len(jobs) == 80 and not counts and jobs[0].name == "openb-pod-0000"


def test_pod_rows_skipped_and_counted(tmp_path):
    path = write(tmp_path, POD_HEADER + "\n".join([
        "p0,1000,1024,0,0,,LS,Running,100,200,100",        # CPU-only
        "p1,1000,1024,1,1000,,BE,Pending,110,150,",        # never ran
        "p2,1000,1024,1,500,T4,LS,Running,120,180,130",    # shared: 50 s
        "p3,1000,1024,2,1000,G2|T4,LS,Failed,150,400,160",  # 240 s
        "p4,1000,1024,1,1000,,LS,Succeeded,170,190,170",   # beyond the limit of 3
    ]) + "\n", "pods.csv")
    jobs, counts = read_pods(path, source(path, limit=3))
    assert jobs == [Job(0, "p0", 0.0, 0, 100.0, None, 1000, 1024, 0),
                    Job(1, "p2", 20.0, 1, 50.0, frozenset({"T4"}), 1000, 1024, 500),
                    Job(2, "p3", 50.0, 2, 240.0, frozenset({"G2", "T4"}), 1000, 1024, 1000)]
    assert counts == {SKIP_NEVER_RAN: 1, SKIP_BEYOND_LIMIT: 1}
    jobs, counts = read_pods(path, source(path, shared_gpu="skip", cpu_only="skip"))
    assert [job.name for job in jobs] == ["p3", "p4"]
    assert counts == {SKIP_NEVER_RAN: 1, SKIP_SHARED: 1, SKIP_CPU_ONLY: 1}
    jobs, counts = read_pods(path, source(path, shared_gpu="whole"))
    assert jobs[1].gpu_milli == 1000 and counts[ROUNDED_SHARED] == 1
    # Arrival gaps divided by the speed-up: p2 at 20 / 4 = 5 s.
    jobs, _ = read_pods(path, source(path, arrival_speedup=4.0))
    assert [job.arrival_s for job in jobs] == [0.0, 5.0, 12.5, 17.5]


@pytest.mark.parametrize("row, message", [
    ("p,1000,1024,two,1000,,LS,Running,1,2,1",
     "line 2 (pod 'p'), column 'num_gpu': must be an integer in 0..1024, not 'two'"),
    ("p,1000,1024,1,1500,,LS,Running,1,2,1",
     "column 'gpu_milli': must be an integer in 0..1000, not '1500'"),
    ("p,1000,1024,2,500,,LS,Running,1,2,1",
     "column 'gpu_milli': 500 (part of a card) needs num_gpu = 1, not 2"),
    ("p,1000,1024,0,300,,LS,Running,1,2,1",
     "column 'gpu_milli': must be 0 for a pod with num_gpu = 0, not 300"),
    ("p,1000,1024,1,0,,LS,Running,1,2,1", "column 'gpu_milli': is 0 for a pod with num_gpu"),
    ("p,1000,1024,1,1000,,LS,Done,1,2,1", "column 'pod_phase': must be one of Running"),
    ("p,1000,1024,1,1000,,LS,Running,x,2,1",
     "column 'creation_time': must be a time in seconds >= 0, not 'x'"),
    ("p,1000,1024,1,1000,,LS,Running,1,3,4",
     "column 'deletion_time': 3 is before scheduled_time 4"),
    ("p,1000,1024,1,1000,,LS,Running,5,9,4",
     "column 'scheduled_time': 4 is before creation_time 5"),
    ("p,1000,1024,1,1000,,LS,Running,5,,6", "column 'deletion_time': is required"),
    (",1000,1024,1,1000,,LS,Running,5,9,6", "line 2, column 'name': must name the pod"),
    ("p,1000,1024,1,1000,T4|,LS,Running,5,9,6", "column 'gpu_spec': has an empty type"),
    ("p,-5,1024,1,1000,,LS,Running,5,9,6",
     "column 'cpu_milli': must be an integer in 0..1000000000, not '-5'"),
    ("p,1000,1024,1,1000,,LS,Running,5,9,6,x", "the row has 12 fields, the header 11"),
    ("p,1000,1024,1,1000", "column 'gpu_spec': is missing"),
    ("p,99999999999999999999,1024,1,1000,,LS,Running,5,9,6",
     "column 'cpu_milli': must be an integer in 0..1000000000, not '99999999999999999999'"),
    ("p,1000,99999999999999999999,1,1000,,LS,Running,5,9,6",
     "column 'memory_mib': must be an integer in 0..1000000000, not '99999999999999999999'"),
    ("p,1000,1024,99999999999999999999,1000,,LS,Running,5,9,6",
     "column 'num_gpu': must be an integer in 0..1024, not '99999999999999999999'"),
])
def test_malformed_pod_rows_name_file_row_and_column(tmp_path, row, message):
    path = write(tmp_path, POD_HEADER + row + "\n", "pods.csv")
    with pytest.raises(TraceError) as error:
        read_pods(path, source(path))
    assert message in str(error.value) and str(path) in str(error.value)


def test_every_malformed_row_is_reported_at_once(tmp_path):
    rows = ["a,1000,1024,1,1000,,LS,Running,1,2,1", "b,x,1024,1,1000,,LS,Running,1,2,1",
            "c,1000,1024,1,2000,,LS,Running,1,2,1", "d,1000,1024,1,1000,,LS,Running,1,2,1",
            "e,1000,1024,1,1000,,LS,Nope,1,2,1"]
    path = write(tmp_path, POD_HEADER + "\n".join(rows) + "\n", "pods.csv")
    with pytest.raises(TraceError) as error:
        read_pods(path, source(path))
    message = str(error.value)
    assert message.startswith(f"{path}: 3 malformed rows:")
    for line, column in ((3, "cpu_milli"), (4, "gpu_milli"), (6, "pod_phase")):
        assert f"line {line} (pod " in message and f"column '{column}'" in message
    # Past 20 errors the rest are counted, not listed.
    many = POD_HEADER + "".join(f"p{i},x,1,1,1000,,LS,Running,1,2,1\n" for i in range(25))
    with pytest.raises(TraceError, match=r"25 malformed rows(.|\n)*\.\.\. and 5 more"):
        read_pods(write(tmp_path, many, "many.csv"), source(path))


def test_duplicate_pod_names_are_an_error(tmp_path):
    # Counting a pod twice would double its load: both lines are named.
    path = write(tmp_path, POD_HEADER + "p,1000,1024,1,1000,,LS,Running,1,2,1\n"
                 "q,1000,1024,1,1000,,LS,Running,1,2,1\np,1000,1024,1,1000,,LS,Running,3,4,3\n",
                 "pods.csv")
    with pytest.raises(TraceError, match=r"line 4 \(pod 'p'\), column 'name': names a pod "
                                         r"twice \(first on line 2\)"):
        read_pods(path, source(path))


@pytest.mark.parametrize("text, message", [
    (POD_HEADER, "has a header but no pod rows"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", "has a header but no pod rows"),
    ("", "missing column 'name'"),
    ("name,cpu_milli,memory_mib,num_gpu\n", "missing column 'gpu_milli'"),
    (POD_HEADER.replace("qos", "qos,extra"), "unknown column 'extra'"),
])
def test_header_only_and_bad_headers_are_reported(tmp_path, text, message):
    # A header-only trace is not a silent table of zeros.
    path = write(tmp_path, text, "pods.csv")
    with pytest.raises(TraceError, match=message):
        read_pods(path, source(path), timed=False)


@pytest.mark.parametrize("content, message", [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "not a UTF-8 text file"),
    (POD_HEADER.encode() + "p\u00e9,1000,1024,1,1000,,LS,Running,1,2,1\n".encode("latin-1"),
     "not a UTF-8 text file"),
    (b"x" * 200_000 + b",1\n", "not valid CSV"),
], ids=["binary", "latin-1", "huge field"])
def test_binary_and_wrongly_encoded_traces_are_a_config_error(tmp_path, content, message):
    # Issue 31 audit: a binary or latin-1 pod or node list gave a UnicodeDecodeError traceback.
    path = tmp_path / "pods.csv"
    path.write_bytes(content)
    for read in (lambda: read_pods(path, source(path)),
                 lambda: read_nodes(path, {}, {}, source(path))):
        with pytest.raises(TraceError, match=f"^{path}: {message}"):
            read()


def test_a_byte_order_mark_is_skipped(tmp_path):
    # A pod or node list saved with a UTF-8 BOM was refused as "missing column 'name'".
    pods = tmp_path / "pods.csv"
    pods.write_bytes(b"\xef\xbb\xbf" + PODS.read_bytes())
    nodes = tmp_path / "nodes.csv"
    nodes.write_bytes(b"\xef\xbb\xbf" + NODES.read_bytes())
    assert read_pods(pods, source(pods)) == read_pods(PODS, source(PODS))
    assert (read_nodes(nodes, BUILTIN_CARD_TYPES, BUILTIN_HOSTS, source(pods))
            == read_nodes(NODES, BUILTIN_CARD_TYPES, BUILTIN_HOSTS, source(PODS)))


def test_cli_refuses_a_20_digit_trace_value_in_one_line(tmp_path, capsys):
    # A 20-digit cpu_milli passed the reader and overflowed the fragmentation's int64 arrays.
    rows = PODS.read_text().replace("openb-pod-0001,88000,", "openb-pod-0001,"
                                    "99999999999999999999,")
    pods = write(tmp_path, rows, "pods.csv")
    scenario = write(tmp_path, f'experiment = "timed"\n[trace]\npods = "{pods}"\n'
                               f'nodes = "{NODES}"\n', "s.toml")
    assert main(["cluster", "--quiet", "--quick", "--config", str(scenario),
                 "--plots", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"gpusched cluster: {pods} line 3 (pod 'openb-pod-0001'), column 'cpu_milli': must be "
        f"an integer in 0..1000000000, not '99999999999999999999'\n")


def test_missing_trace_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_pods(tmp_path / "absent.csv", source(tmp_path / "absent.csv"))


def test_quick_nodes_spreads_the_quick_cluster_over_the_node_list(tmp_path):
    # Ten GPU nodes n0..n9; quick_nodes = 4 keeps index 10 * i // 4 for i = 0..3: n0, n2, n5,
    # n7, and the note counts the 6 left out. Without --quick every node is kept.
    from model.cluster.cli import prepare

    write(tmp_path, NODE_HEADER + "".join(f"n{i},1000,1024,1,T4\n" for i in range(10)),
          "nodes.csv")
    write(tmp_path, POD_HEADER + "p,1000,1024,1,1000,,LS,Running,1,9,1\n", "pods.csv")
    scenario = load_scenario(write(tmp_path, '[trace]\npods = "pods.csv"\nnodes = "nodes.csv"\n'
                                             'quick_nodes = 4\n', "s.toml"))
    quick = prepare(scenario, 1, quick=True)
    assert [node.name for node in quick.nodes] == ["n0", "n2", "n5", "n7"]
    assert quick.input_notes[f"node list: {SKIP_QUICK_NODES}"] == 6
    assert len(prepare(scenario, 1).nodes) == 10


def test_quick_nodes_must_keep_a_gpu_node(tmp_path):
    from model.cluster.cli import prepare

    write(tmp_path, NODE_HEADER + "c0,1000,1024,0,\nc1,1000,1024,0,\nn2,1000,1024,1,T4\n",
          "nodes.csv")
    write(tmp_path, POD_HEADER + "p,1000,1024,1,1000,,LS,Running,1,9,1\n", "pods.csv")
    scenario = load_scenario(write(tmp_path, '[trace]\npods = "pods.csv"\nnodes = "nodes.csv"\n'
                                             'quick_nodes = 1\n', "s.toml"))
    with pytest.raises(TraceError, match="trace.quick_nodes = 1 keeps no GPU node"):
        prepare(scenario, 1, quick=True)
    with pytest.raises(ConfigError, match="quick_nodes must be an integer >= 0"):
        load_scenario(write(tmp_path, '[trace]\npods = "pods.csv"\nquick_nodes = -1\n', "t.toml"))


def test_synthetic_files_round_trip_in_every_format(tmp_path):
    # The synthetic generator writes each format; the readers read back what it wrote.
    nodes = alibaba_nodes(0.02)
    assert {card for node in nodes for card in node.cards} == V2023_MODELS
    write_node_list(tmp_path / "nodes.csv", nodes)
    read, _ = read_nodes(tmp_path / "nodes.csv", BUILTIN_CARD_TYPES, BUILTIN_HOSTS,
                         source(tmp_path / "nodes.csv"))
    assert [(node.name, node.cards, node.cpu_milli) for node in read] == \
        [(node.name, node.cards, node.cpu_milli) for node in nodes]
    import random

    from model.cluster.config import AlibabaWorkload

    jobs = alibaba_jobs(AlibabaWorkload(jobs=50, pinned_fraction=0.5, max_duration_s=1e5),
                        random.Random(3))
    write_pod_list(tmp_path / "pods.csv", jobs)
    back, _ = read_pods(tmp_path / "pods.csv", source(tmp_path / "pods.csv"))
    assert [(job.cards, job.gpu_milli, job.cpu_milli, job.types) for job in back] == \
        [(job.cards, job.gpu_milli, job.cpu_milli, job.types) for job in jobs]
    write_pod_list(tmp_path / "untimed.csv", jobs, timed=False)
    assert pod_list_format(tmp_path / "untimed.csv") == "untimed"


def test_v2023_composition_is_the_published_one():
    # 1,213 GPU nodes and 6,212 GPUs (the FGD paper's cluster), by model.
    assert sum(count for *_, count in V2023_NODES) == 1213
    gpus = {}
    for _, _, per_node, model, count in V2023_NODES:
        gpus[model] = gpus.get(model, 0) + per_node * count
    assert gpus == {"G2": 4392, "T4": 842, "G3": 312, "P100": 265, "V100M32": 204,
                    "V100M16": 195, "A10": 2}
    assert len(alibaba_nodes(1.0)) == 1213

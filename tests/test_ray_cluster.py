"""The Ray backend on a real multi-node Ray cluster (two nodes started on this machine).

``ray.cluster_utils.Cluster`` runs a head node and a second node as separate Ray nodes (own
raylet, own node id) on one machine: the same placement and messaging as machines on a network,
without the network. Each node carries a custom resource so the test can place actors exactly.
"""

import gymnasium as gym
import pytest
import testing_env
import vector_scenario
from vector_scenario import check_against_expected, make_scenario_vec, play

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():  # another module's local instance; this one needs the cluster
        ray.shutdown()
    node_args = {"num_cpus": 1, "include_dashboard": False}
    c = cluster_utils.Cluster(
        initialize_head=True, head_node_args={**node_args, "resources": {"node_a": 1}}
    )
    c.add_node(**node_args, resources={"node_b": 1})
    c.wait_for_nodes()
    for module in (testing_env, vector_scenario):
        ray.cloudpickle.register_pickle_by_value(module)
    yield c
    for module in (testing_env, vector_scenario):
        ray.cloudpickle.unregister_pickle_by_value(module)
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


@pytest.fixture
def no_ray_connection(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield
    if ray.is_initialized():
        ray.shutdown()


def _sync_transcript():
    venv = make_scenario_vec("sync")
    try:
        return play(venv)
    finally:
        venv.close()


def _alive_nodes() -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def test_actors_placed_on_both_nodes_play_exactly_like_sync_mode(cluster, no_ray_connection):
    # make_vec connects through vector_kwargs["ray_init"] (nothing is initialised yet).
    # num_cpus=0: with any resource given, Ray would otherwise hold 1 CPU per actor for life.
    on_a = {"num_cpus": 0, "resources": {"node_a": 0.01}}
    on_b = {"num_cpus": 0, "resources": {"node_b": 0.01}}
    venv = make_scenario_vec(
        "ray",
        vector_kwargs={
            "ray_init": {"address": cluster.address, "log_to_driver": False},
            "actor_options": [on_a, on_b, on_a, on_b],
        },
    )
    try:
        assert len(_alive_nodes()) == 2  # connected to the cluster, not a new local instance
        nodes = venv.node_ids()
        assert nodes[0] == nodes[2] != nodes[1] == nodes[3]
        assert set(nodes) == _alive_nodes()
        transcript = play(venv)
    finally:
        venv.close()
    check_against_expected(transcript)
    assert transcript == _sync_transcript()


def test_ray_address_env_var_selects_the_cluster(cluster, no_ray_connection, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    venv = make_scenario_vec(
        "ray",
        vector_kwargs={"ray_init": {"log_to_driver": False}, "actor_options": {"num_cpus": 0.25}},
    )
    try:
        assert len(_alive_nodes()) == 2
        assert set(venv.node_ids()) <= _alive_nodes()
        assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
        transcript = play(venv)
    finally:
        venv.close()
    assert transcript == _sync_transcript()

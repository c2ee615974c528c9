"""A daemon draining on SIGTERM while clients keep calling: every call it answered reaches its
client. Before, gRPC was stopped the instant the last call's handler returned, and answers not yet
sent were cancelled: in ten drains under eight busy clients, 8 calls ended UNAVAILABLE "Cancelling
all calls" and 16 "Stream removed"."""
import threading
import time

import grpc

from conftest import start_daemon
from uopd.v1 import kernel_service_pb2 as pb
from uopd.v1 import kernel_service_pb2_grpc as rpc


def test_answers_already_decided_reach_their_clients_through_a_drain(tmp_path):
    outcomes: dict[str, int] = {}
    lock = threading.Lock()
    for trial in range(6):
        daemon = start_daemon(tmp_path / str(trial))
        stub = rpc.KernelServiceStub(grpc.insecure_channel(daemon.address))
        stop_at = time.monotonic() + 1.2

        def busy() -> None:
            while time.monotonic() < stop_at:
                try:
                    stub.ListDevices(pb.ListDevicesRequest(), timeout=5)
                    key = "OK"
                except grpc.RpcError as e:
                    key = f"{e.code().name}: {(e.details() or '')[:40]}"
                    if "shutting down" not in key:
                        time.sleep(0.01)  # gone: do not spin on a refused connection
                with lock:
                    outcomes[key] = outcomes.get(key, 0) + 1

        threads = [threading.Thread(target=busy) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.4)
        daemon.stop()
        for t in threads:
            t.join()
    cut_off = {k: v for k, v in outcomes.items()
               if "Cancelling all calls" in k or "Stream removed" in k}
    assert outcomes.get("OK", 0) > 0 and any("shutting down" in k for k in outcomes), outcomes
    assert not cut_off, f"answers cut off by the stop: {cut_off} (all: {outcomes})"

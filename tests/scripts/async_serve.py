"""An asyncio server: its step is an ``async def``, awaited one request at a time or several at once.

usage: async_serve.py MODE [--requests N]

MODE: sequential (each request awaited in turn), gather (requests in batches of 3 awaited
together on one event loop), threadsafe (the loop runs in a thread; the main thread hands it each
request with run_coroutine_threadsafe), stream (a generator function yields each answer).
It prints a checksum of the answers, so a run under npuprof-run can be compared with a bare one.
"""

import argparse
import asyncio
import threading

import torch

torch.manual_seed(0)
WEIGHT = torch.randn(64, 64)


def answer(request: int) -> float:
    with torch.no_grad():
        return torch.tanh(torch.full((8, 64), float(request % 7)) @ WEIGHT).sum().item()


async def handle(request: int) -> float:
    await asyncio.sleep(0.002)  # the request arrives
    result = answer(request)
    await asyncio.sleep(0.001)  # the reply goes out
    return result


def stream(requests: int):
    for request in range(requests):
        yield answer(request)


async def serve(mode: str, requests: int) -> list[float]:
    if mode == "sequential":
        return [await handle(request) for request in range(requests)]
    results: list[float] = []
    for first in range(0, requests, 3):
        results += await asyncio.gather(*(handle(r) for r in range(first, min(first + 3, requests))))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["sequential", "gather", "threadsafe", "stream"])
    parser.add_argument("--requests", type=int, default=12)
    args = parser.parse_args()
    if args.mode == "stream":
        results = list(stream(args.requests))
    elif args.mode == "threadsafe":
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        results = [asyncio.run_coroutine_threadsafe(handle(r), loop).result() for r in range(args.requests)]
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
    else:
        results = asyncio.run(serve(args.mode, args.requests))
    print(f"answers {len(results)} checksum {float.hex(sum(results))}")


if __name__ == "__main__":
    main()

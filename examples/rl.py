"""A two-stage RL-style loop: a rollout stage and an update stage, in one process or in two.

Profile each stage on its own, each with its own step selection and its own output folder:

    npuprof-run --scenario rl \\
        --stage rollout=rl_lib:Actor.generate,skip-first=1,active=2 \\
        --stage update=rl_lib:Learner.update,skip-first=2,active=1 \\
        --output-dir rl_prof -- python examples/rl.py --iterations 6 [--split]

With the rl scenario each chosen call is recorded from its entry to its return as a window of its
own: rl_prof/rollout/ gets the 2nd and 3rd rollouts, rl_prof/update/ the 3rd update. --split
runs the rollouts in a separate (spawned) process, as RL frameworks run their rollout workers.
It prints the mean reward of each iteration and a checksum of the final weights.
"""

import argparse
import hashlib
import multiprocessing

from rl_lib import Actor, Learner, make_policy


def rollout_worker(requests, results) -> None:
    """The rollout process: receives the latest weights, returns one batch per request."""
    actor = Actor(make_policy())
    for iteration, weights in iter(requests.get, None):
        actor.policy.load_state_dict(weights)
        results.put(actor.generate(iteration))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--split", action="store_true", help="run the rollout stage in its own process")
    args = parser.parse_args()

    policy = make_policy()
    learner = Learner(policy)
    if args.split:
        context = multiprocessing.get_context("spawn")
        requests, results = context.Queue(), context.Queue()
        worker = context.Process(target=rollout_worker, args=(requests, results))
        worker.start()
    else:
        actor = Actor(policy)
    for iteration in range(args.iterations):
        if args.split:
            requests.put((iteration, policy.state_dict()))
            batch = results.get()
        else:
            batch = actor.generate(iteration)
        learner.update(batch)
        print(f"iteration {iteration} mean reward {batch['rewards'].mean().item():.6f}")
    if args.split:
        requests.put(None)
        worker.join()
    digest = hashlib.sha256()
    for tensor in policy.state_dict().values():
        digest.update(repr(tensor.tolist()).encode())
    print("weights sha256", digest.hexdigest())


if __name__ == "__main__":
    main()

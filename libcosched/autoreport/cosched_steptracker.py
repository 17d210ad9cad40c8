# cosched_steptracker: which optimizer steps are the training loop's steps, and the time between
# them. Pure bookkeeping (no torch, no I/O), fed by the step hooks of cosched_torchhook.
"""Training steps out of optimizer steps.

Every call of every optimizer's step() arrives here as enter(opt) ... leave(opt). Two rules make
one training step out of them:

- Nesting: only the outermost step() in progress counts. A wrapper optimizer (accelerate,
  Lightning, DeepSpeed's ZeRO calling FusedAdam once per parameter group) steps its inner
  optimizers inside its own step(); those inner calls are not steps of the loop. A stack per
  thread holds the step() calls in progress; a call that raised never left, so an optimizer
  found on the stack when it enters again cuts the stack back to below itself.
- Several optimizers (GANs, multi-task): the steps of the most frequent one count, as PyTorch's
  KinetoStepTracker takes the most advanced of its requesters. The leader is the optimizer whose
  steps count; another one takes its place when it steps twice while the leader steps not at
  all. Counting since the leader's last step, not since the start, lets an optimizer made
  later (a new phase, a fresh optimizer per epoch) take over at once instead of after it has
  caught up with the old one's total.

leave() returns the time since the previous counted step (the monotonic clock): the first
counted step only starts the clock.
"""

import threading
import time

TAKEOVER_STEPS = 2  # steps of another optimizer, with none of the leader's between, to lead


class StepTracker:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._in_progress = threading.local()  # .stack: the step() calls in progress, outermost first
        self._leader = None  # id() of the optimizer whose steps count
        self._since_leader = {}  # id() -> its steps since the leader's last one
        self._last = None  # the clock at the last counted step

    def _stack(self):
        stack = getattr(self._in_progress, "stack", None)
        if stack is None:
            stack = self._in_progress.stack = []
        return stack

    def enter(self, optimizer):
        """A step() begins."""
        stack = self._stack()
        for i, o in enumerate(stack):
            if o is optimizer:  # its earlier step() raised and never left
                del stack[i:]
                break
        stack.append(optimizer)

    def leave(self, optimizer):
        """A step() ended: the seconds since the previous training step when this one is a
        training step (not the first), else None."""
        stack = self._stack()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is optimizer:
                del stack[i:]
                break
        if stack:
            return None  # inside another optimizer's step()
        if not self._counts(id(optimizer)):
            return None
        now = self._clock()
        last, self._last = self._last, now
        return None if last is None else now - last

    def _counts(self, key):
        """Whether a step of the optimizer `key` is a training step; keeps the leader."""
        if key != self._leader:
            n = self._since_leader.get(key, 0) + 1
            if self._leader is not None and n < TAKEOVER_STEPS:
                self._since_leader[key] = n
                return False
            self._leader = key
        self._since_leader.clear()
        return True

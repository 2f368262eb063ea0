"""The catalogue of ``make mutants``: realistic single-edit bugs of the RTL, each of which the
quick tier must catch (:mod:`scripts.mutants` runs them).

A :class:`Mutant` replaces one snippet of one source file of ``hdl/`` (it must occur exactly
once) with its faulty version, as a slip of the pen would. Unlike ``formal/mutations.py``,
which patches a class while a proof's harness is built, these edit the text, so that every
test, in every process and simulator, runs on the faulty design.
"""

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Mutant", "MUTANTS"]


@dataclass(frozen=True)
class Mutant:
    """``name``; ``fault``: what goes wrong, as a bug report would say it; ``file`` (relative
    to the repository); the snippet ``old`` and its faulty version ``new``."""
    name: str
    fault: str
    file: str
    old: str
    new: str

    def source(self, tree):
        """The text of the mutant's file in ``tree``; raises ``ValueError`` unless ``old``
        occurs in it exactly once (the code moved on: the catalogue needs an update)."""
        text = (Path(tree) / self.file).read_text()
        found = text.count(self.old)
        if found != 1:
            raise ValueError(f"mutant {self.name}: its snippet occurs {found} times in "
                             f"{self.file}, not once; update bench/mutants.py")
        return text

    def apply(self, tree):
        """Put the fault into ``tree`` (a copy of the repository)."""
        path = Path(tree) / self.file
        path.write_text(self.source(tree).replace(self.old, self.new))


MUTANTS = [
    Mutant(
        'capacity_one_short',
        'A line that already holds capacity - 1 contributions rejects the next one with '
        'CAPACITY (unless it arrives on the clock right after the previous one), so a line '
        'accepts only 2**W - 2 spaced contributions.',
        'hdl/slots.py',
        'm, _of_next_word(n, lambda word: word.state.n == p.capacity), copies, "full_taken")',
        'm, _of_next_word(n, lambda word: word.state.n == p.capacity - 1), copies, '
        '"full_taken")'),
    Mutant(
        'back_to_back_past_capacity',
        'Back-to-back contributions to a line at capacity are still accepted: the one right '
        'after the contribution that brought n to capacity is added too, and n wraps.',
        'hdl/slot_update.py',
        'after.full.eq(Mux(live & accepted, n == p.capacity - 1, self.full)),',
        'after.full.eq(Mux(live & accepted, n == p.capacity, self.full)),'),
    Mutant(
        'region_end_inclusive',
        "The address decoder takes a region's end as inside it, so the first line after an "
        'aggregating region is aggregated instead of being identity memory.',
        'hdl/decode.py',
        'below_end = Cat(registered_order(m, copy, region.end, f"below_end_{r}")',
        'below_end = Cat(registered_order(m, copy, region.end, f"below_end_{r}", or_equal=True)'),
    Mutant(
        'clear_skips_first_line',
        "CTRL.CLEAR leaves the region's first line resident in its slot, so after the clear "
        'that line still reads its old result and counts on from its old n.',
        'hdl/slots.py',
        'return (entry.tag >= t1.tag) & (entry.tag < self.clear_high)',
        'return (entry.tag > t1.tag) & (entry.tag < self.clear_high)'),
    Mutant(
        'clear_takes_line_past_end',
        'CTRL.CLEAR of a region also empties, without write-back, a resident line whose '
        "accumulator sits right at the region's end (another region's first line), losing its "
        'contributions.',
        'hdl/slots.py',
        'return (entry.tag >= t1.tag) & (entry.tag < self.clear_high)',
        'return (entry.tag >= t1.tag) & (entry.tag <= self.clear_high)'),
    Mutant(
        'zero_write_past_end',
        "CTRL.CLEAR writes one zero line too many: the line right past the region's "
        'accumulators is zeroed too.',
        'hdl/scan_tasks.py',
        'm.d.sync += [zero_address.eq(following), zero_left.eq(following < steps.high)]',
        'm.d.sync += [zero_address.eq(following), zero_left.eq(following <= steps.high)]'),
    Mutant(
        'forward_w2_for_w1',
        "When an op's slot was written by P2 on the last edge, it takes the word from W2 "
        'instead of W1, so of two contributions to one line two ops apart the first is lost.',
        'hdl/slots.py',
        'n.current = by_group(m, p, n.entry_layout, n.sel_w1, n.w1, w2_or_read, "current")',
        'n.current = by_group(m, p, n.entry_layout, n.sel_w1, n.w2, w2_or_read, "current")'),
    Mutant(
        'forward_w2_dropped',
        'The W2 forwarding case is dropped: an op whose slot P2 wrote on the edge after its read '
        'takes the stale block-RAM word, so of two contributions to one line three ops apart '
        'the first is lost.',
        'hdl/slots.py',
        'w2_or_read = by_group(m, p, n.entry_layout, n.sel_w2, n.w2, w3_or_read, "w2_or_read")',
        'w2_or_read = by_group(m, p, n.entry_layout, n.sel_w2, w3_or_read, w3_or_read, '
        '"w2_or_read")'),
    Mutant(
        'forward_w3_dropped',
        'The W3 forwarding case is dropped: an op whose slot W1 wrote on its read\'s own edge '
        'takes the stale block-RAM word, so of two contributions to one line four ops apart '
        'the first is lost.',
        'hdl/slots.py',
        'w3_or_read = by_group(m, p, n.entry_layout, n.sel_w3, n.w3, n.rdata, "w3_or_read")',
        'w3_or_read = by_group(m, p, n.entry_layout, n.sel_w3, n.rdata, n.rdata, "w3_or_read")'),
    Mutant(
        'fill_ignores_departed',
        'A miss starts its fill at once even when a line has left its slot since every write '
        'was acknowledged, so the fill of a line just evicted can overtake its own write-back '
        'and read its stale state.',
        'hdl/miss_handler.py',
        'read_now = ~departed & ~self.host_writes_pending',
        'read_now = ~self.host_writes_pending'),
    Mutant(
        'raw_read_without_flush',
        'A host read of accumulator memory is served while slots are still dirty, so it returns '
        'the state from before the resident contributions.',
        'hdl/dispatch.py',
        'raw_read_clean = ~self.any_dirty & self.pool_idle',
        'raw_read_clean = self.pool_idle'),
    Mutant(
        'completion_one_late',
        'A line is complete one contribution late: it is written back on the EXPECTED+1-th '
        'contribution, or never if only EXPECTED arrive.',
        'hdl/slots.py',
        'n.t1_before_last.eq(ta.expected - 1), n.t1_two_before.eq(ta.expected - 2)]',
        'n.t1_before_last.eq(ta.expected), n.t1_two_before.eq(ta.expected - 1)]'),
    Mutant(
        'task_scan_starts_at_1',
        'The FLUSH, EVICT and CLEAR scans start at slot 1: slot 0 is never written back, '
        'emptied or cleared.',
        'hdl/scan_tasks.py',
        'self.m.d.sync += [self.task.eq(kind), self.command.eq(is_command), self.index.eq(0)]',
        'self.m.d.sync += [self.task.eq(kind), self.command.eq(is_command), self.index.eq(1)]'),
    Mutant(
        'drop_scan_stops_early',
        "The pool's scan after a reset stops one slot early: the last slot keeps its line from "
        'before the reset, and its loss is not counted in CNT_DROPPED.',
        'hdl/slots.py',
        'scanning.eq(scan_index != params.slots - 1)]',
        'scanning.eq(scan_index != params.slots - 2)]'),
    Mutant(
        'flush_leaves_dirty',
        'FLUSH writes a dirty line back but leaves it dirty, so every later flush or eviction '
        'writes it back again and a reset counts it as lost.',
        'hdl/slot_update.py',
        'm.d.comb += [new.dirty.eq(word.dirty & ~word.valid),',
        'm.d.comb += [new.dirty.eq(word.dirty),'),
    Mutant(
        'evict_drops_dirty_lines',
        "EVICT empties the slots without writing the dirty ones back, so a host's write of "
        'accumulator memory loses the contributions held on chip for every other line.',
        'hdl/slot_update.py',
        'm.d.comb += [new.valid.eq(0), write_back.eq(word.valid & word.dirty),',
        'm.d.comb += [new.valid.eq(0), write_back.eq(0),'),
    Mutant(
        'flush_busy_stuck',
        'STATUS.FLUSH_BUSY stays set after a CTRL.FLUSH has finished, until another slot task '
        'starts, so a driver that polls it never sees the flush end.',
        'hdl/scan_tasks.py',
        'self.flush_busy.eq(pending.flush | (running & command & (task == Task.FLUSH))),',
        'self.flush_busy.eq(pending.flush | (command & (task == Task.FLUSH))),'),
    Mutant(
        'devload_light_off_by_one',
        'DevLoad reads Optimal instead of Light when exactly its Light limit of requests is '
        'held.',
        'hdl/devload.py',
        'm.d.comb += self.dev_load.eq(Mux(held <= light, DevLoad.LIGHT,',
        'm.d.comb += self.dev_load.eq(Mux(held < light, DevLoad.LIGHT,'),
    Mutant(
        'write_cmp_pops_read_line',
        'The completion of an identity write also pops the identity-read line queue, so a read '
        "in flight behind a write gets another read's line.",
        'hdl/responder.py',
        'self.memory_data.ready.eq(sent_from[Source.MEMORY] & head.data),',
        'self.memory_data.ready.eq(sent_from[Source.MEMORY]),'),
    Mutant(
        'axi_len_off_by_one',
        'ARLEN and AWLEN are the number of beats, not beats - 1: every AXI burst announces one '
        'beat too many.',
        'hdl/axi.py',
        'getattr(axi, f"{channel}len").eq(command.payload.beats - 1)]',
        'getattr(axi, f"{channel}len").eq(command.payload.beats)]'),
    Mutant(
        'memwrptl_identity_all_bytes',
        'An identity MemWrPtl writes every byte of its line: the bytes outside its mask are '
        'overwritten with what its data carries.',
        'hdl/controller.py',
        'identity.write.payload.strobe.eq(request.byte_enable),',
        'identity.write.payload.strobe.eq(-1),'),
    Mutant(
        'invalid_code_added_as_minus_one',
        'The slot pool adds the invalid G-Ternary code 10 as -1 instead of 0, so a line with '
        'invalid codes pulls its sums down.',
        'hdl/slot_ops.py',
        'minus = ternary & low & high       # G-Ternary -1: all ones, sign-extended\n'
        '        augend = Cat(pairs[k][:width], ternary, pairs[k][width:])\n'
        '        addend = Cat(low, ',
        'minus = ternary & high       # G-Ternary -1: all ones, sign-extended\n'
        '        augend = Cat(pairs[k][:width], ternary, pairs[k][width:])\n'
        '        addend = Cat(low | minus, '),
    Mutant(
        'partial_mask_any_as_full',
        'A MemWrPtl counts as a whole-line write when any byte enable is set, so a partial '
        'contribution is added instead of rejected with PARTIAL.',
        'hdl/ingress.py',
        'entry.full_line.eq(whole | rwd.byte_enable.all()),',
        'entry.full_line.eq(whole | rwd.byte_enable.any()),'),
    Mutant(
        'axil_partial_write_lands',
        'The AXI4-Lite register port answers a write of less than a whole register SLVERR but '
        'writes it anyway.',
        'hdl/axil.py',
        'm.d.comb += bus.w_stb.eq(writable & full_strobe)',
        'm.d.comb += bus.w_stb.eq(writable)'),
    Mutant(
        'axi_poison_answered_okay',
        'The AXI4 front end answers a read of a line that device memory failed (poisoned) '
        'OKAY, with whatever data came.',
        'hdl/axi_front.py',
        'resp = Mux(~head.ok | drs.payload.poison, RESP_SLVERR,',
        'resp = Mux(~head.ok, RESP_SLVERR,'),
    Mutant(
        'prefetch_kept_after_departure',
        'A line read ahead stays usable after a line leaves its slot, so an op can install '
        'the state memory held before that line\'s write-back landed.',
        'hdl/miss_handler.py',
        'with m.If(self.departure | self.host_writes_pending | self.hold_prefetch):',
        'with m.If(self.host_writes_pending | self.hold_prefetch):'),
    Mutant(
        'fast_install_over_an_occupant',
        'An op whose line was read ahead is installed at once even when its slot holds '
        'another line, which is lost without its write-back.',
        'hdl/miss_handler.py',
        '& self.data_ok & ~self.occupant_valid',
        '& self.data_ok & 1'),
    Mutant(
        'fast_install_of_another_op',
        "A prefetched line is installed under whatever op T1 holds when its read is in: an "
        "op of another line takes the prefetched line's state as its own.",
        'hdl/miss_handler.py',
        'usable & self.t1_prefetched',
        'usable & 1'),
]

// The compiled soak bench of nf_controller (make soak): a CXL.mem host and an AXI4 device memory
// around the Verilated controller, with no Python in the per-clock loop.
//
// Built by bench/compiled.py, which generates soak_config.h: the record layouts (the same numpy
// dtypes bench/soak_records.py defines) and the bit offsets of the CXL.mem payload fields (from
// spec/cxl.py). Usage:
//
//   soak PLAN OPS ANSWERS SUMMARY MEMORY [WAVES FROM TO]
//
// PLAN (text) holds the seed, the op count, device-memory fault ranges and the traffic phases;
// OPS the requests (Op records, in the order the golden model serves them); each request may
// only be sent once every request up to its `after` index has its response, which is how the
// stimulus keeps requests that do not commute out of flight together. ANSWERS receives one
// Answer record per op (its response and the clocks it was sent and answered), SUMMARY a JSON
// object of counts, MEMORY every line device memory holds at the end. With WAVES, an FST
// waveform of clocks FROM to TO is written (a build with tracing).
//
// The host sends requests in order on each of M2S Req and RwD, idles at random, holds at most
// OUTSTANDING requests, and stalls S2M NDR and DRS at random. The memory serves AXI4 bursts with
// a set latency (first read beat, write response), at most one data beat per `interval` clocks,
// read bursts of different IDs out of order, and random pauses on every channel; it answers
// SLVERR on the fault ranges, where writes do not land. A run whose host neither sends nor
// receives for STALL_LIMIT clocks while requests are owed stops and says so.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "Vnf_controller.h"
#include "verilated.h"
#if VM_TRACE
#include "verilated_fst_c.h"
#endif

#include "soak_config.h"

// Verilator escapes the double underscores of Amaranth's port names (the CXL.mem channels);
// the AXI4 memory port is named as vendor tools name it (m_axi_awvalid, ...).
#define PORT(bus, signal) (top->bus##___05F##signal)
#define AXI(signal) (top->m_axi_##signal)

namespace {

constexpr uint64_t STALL_LIMIT = 200000;
constexpr unsigned OUTSTANDING = 256;
constexpr uint32_t MAX_POLLS = 100000;
constexpr int RESP_SLVERR = 2;
constexpr unsigned MAX_WORDS = 32;  // 32-bit words of the widest payload (a 512-bit line + fields)

using Words = uint32_t[MAX_WORDS];

// Bit fields in a little-endian word buffer.
void set_bits(uint32_t* w, int offset, int width, uint64_t value) {
    for (int i = 0; i < width; ++i) {
        int bit = offset + i;
        uint32_t mask = 1u << (bit % 32);
        if ((value >> i) & 1) w[bit / 32] |= mask; else w[bit / 32] &= ~mask;
    }
}
uint64_t get_bits(const uint32_t* w, int offset, int width) {
    uint64_t value = 0;
    for (int i = 0; i < width; ++i) {
        int bit = offset + i;
        value |= (uint64_t)((w[bit / 32] >> (bit % 32)) & 1) << i;
    }
    return value;
}
// A field of ``bits`` bits from little-endian bytes (the last one partly, for a byte-enable
// mask of a line shorter than 64 bytes).
void set_bytes(uint32_t* w, int offset, const uint8_t* bytes, int bits) {
    for (int i = 0; 8 * i < bits; ++i)
        set_bits(w, offset + 8 * i, std::min(8, bits - 8 * i), bytes[i]);
}
void get_bytes(const uint32_t* w, int offset, uint8_t* bytes, int count) {
    for (int i = 0; i < count; ++i) bytes[i] = (uint8_t)get_bits(w, offset + 8 * i, 8);
}

// Ports of any width to and from word buffers.
template <std::size_t N> void store(VlWide<N>& port, const uint32_t* w) {
    for (std::size_t i = 0; i < N; ++i) port[i] = w[i];
}
template <typename T> void store(T& port, const uint32_t* w) {
    port = (T)(w[0] | (uint64_t)w[1] << 32);
}
template <std::size_t N> void load(const VlWide<N>& port, uint32_t* w) {
    std::memset(w, 0, sizeof(Words));
    for (std::size_t i = 0; i < N; ++i) w[i] = port[i];
}
template <typename T> void load(const T& port, uint32_t* w) {
    std::memset(w, 0, sizeof(Words));
    w[0] = (uint32_t)(uint64_t)port;
    w[1] = (uint32_t)((uint64_t)port >> 32);
}

struct Phase {
    uint64_t first_op;
    double host_idle, s2m_stall, axi_pause;
    unsigned latency, interval;
};

struct Plan {
    uint64_t seed = 1, ops = 0;
    std::vector<std::pair<uint64_t, uint64_t>> faults;
    std::vector<Phase> phases;
};

Plan read_plan(const char* path) {
    Plan plan;
    FILE* f = std::fopen(path, "r");
    if (!f) { std::perror(path); std::exit(2); }
    char word[32];
    while (std::fscanf(f, "%31s", word) == 1) {
        std::string key(word);
        if (key == "seed") {
            std::fscanf(f, "%lu", &plan.seed);
        } else if (key == "ops") {
            std::fscanf(f, "%lu", &plan.ops);
        } else if (key == "fault") {
            uint64_t lo, hi;
            std::fscanf(f, "%lu %lu", &lo, &hi);
            plan.faults.push_back({lo, hi});
        } else if (key == "phase") {
            Phase p;
            std::fscanf(f, "%lu %lf %lf %lf %u %u", &p.first_op, &p.host_idle, &p.s2m_stall,
                        &p.axi_pause, &p.latency, &p.interval);
            plan.phases.push_back(p);
        } else {
            std::fprintf(stderr, "%s: unknown plan entry '%s'\n", path, word);
            std::exit(2);
        }
    }
    std::fclose(f);
    if (plan.phases.empty() || plan.phases[0].first_op != 0) {
        std::fprintf(stderr, "%s: the first phase must start at op 0\n", path);
        std::exit(2);
    }
    return plan;
}

template <typename T> T* map_file(const char* path, uint64_t count, bool write) {
    int fd = open(path, write ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0644);
    if (fd < 0) { std::perror(path); std::exit(2); }
    uint64_t size = count * sizeof(T);
    if (write && ftruncate(fd, (off_t)size) != 0) { std::perror(path); std::exit(2); }
    if (!write) {
        struct stat st;
        fstat(fd, &st);
        if ((uint64_t)st.st_size != size) {
            std::fprintf(stderr, "%s: %ld bytes, expected %lu ops of %zu bytes\n", path,
                         (long)st.st_size, count, sizeof(T));
            std::exit(2);
        }
    }
    if (size == 0) { close(fd); return nullptr; }
    void* p = mmap(nullptr, size, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) { std::perror(path); std::exit(2); }
    return static_cast<T*>(p);
}

struct Line { uint8_t bytes[LINE_BYTES]; };

// Device memory behind the AXI4 port.
class Memory {
public:
    struct Stalls { uint64_t ar = 0, aw = 0, w = 0, r = 0, b = 0; } stalls;
    uint64_t read_beats = 0, write_beats = 0, errors = 0;
    std::unordered_map<uint64_t, Line> lines;

    Memory(const Plan& plan, std::mt19937_64& rng) : faults_(plan.faults), rng_(rng) {}
    void set_phase(const Phase& p) { phase_ = p; }

    bool faulty(uint64_t address) const {
        for (auto& f : faults_) if (f.first <= address && address < f.second) return true;
        return false;
    }

    // Before the edge: drive the ready and valid signals the memory owns.
    void drive(Vnf_controller* top, uint64_t now) {
        bool beat_free = now >= next_beat_;
        AXI(arready) = !pause();
        AXI(awready) = !pause();
        // A read beat already offered stays offered; a due one is offered when a beat is free.
        if (!r_on_bus_) {
            if (!reading_) pick_read(now);
            if (reading_ && beat_free && !pause()) offer_read(top);
        }
        AXI(rvalid) = r_on_bus_;
        bool read_wants = r_on_bus_ || (reading_ && beat_free);
        AXI(wready) = !writes_.empty() && beat_free && !read_wants && !pause();
        if (!b_on_bus_ && !responses_.empty() && responses_.front().due <= now && !pause()) {
            AXI(bid) = responses_.front().id;
            AXI(bresp) = responses_.front().resp;
            b_on_bus_ = true;
        }
        AXI(bvalid) = b_on_bus_;
    }

    // At the edge: take what moved (sampled from the settled signals before the edge).
    void sample(Vnf_controller* top, uint64_t now) {
        if (AXI(arvalid) && AXI(arready)) {
            Burst b{(unsigned)AXI(arid), (uint64_t)AXI(araddr),
                    (unsigned)AXI(arlen) + 1u, now + phase_.latency};
            reads_[b.id].push_back(b);
            read_order_.push_back(b.id);
        }
        if (AXI(awvalid) && AXI(awready)) {
            writes_.push_back(Burst{(unsigned)AXI(awid), (uint64_t)AXI(awaddr),
                                    (unsigned)AXI(awlen) + 1u, 0});
        }
        if (AXI(wvalid) && AXI(wready)) take_write(top, now);
        if (r_on_bus_ && AXI(rready)) {
            r_on_bus_ = false;
            read_beats++;
            next_beat_ = now + phase_.interval;
            if (++reading_->done == reading_->beats) {
                reads_[reading_->id].pop_front();
                reading_ = nullptr;
            }
        }
        if (b_on_bus_ && AXI(bready)) {
            b_on_bus_ = false;
            responses_.pop_front();
        }
        stalls.ar += AXI(arvalid) && !AXI(arready);
        stalls.aw += AXI(awvalid) && !AXI(awready);
        stalls.w += AXI(wvalid) && !AXI(wready);
        stalls.r += AXI(rvalid) && !AXI(rready);
        stalls.b += AXI(bvalid) && !AXI(bready);
    }

    bool moved(Vnf_controller* top) const {
        return (AXI(arvalid) && AXI(arready)) || (AXI(awvalid) && AXI(awready))
            || (AXI(wvalid) && AXI(wready)) || (AXI(rvalid) && AXI(rready))
            || (AXI(bvalid) && AXI(bready));
    }

private:
    struct Burst { unsigned id; uint64_t address; unsigned beats; uint64_t due; unsigned done = 0;
                   int resp = 0; };
    struct Response { unsigned id; int resp; uint64_t due; };

    bool pause() { return phase_.axi_pause > 0 && unit_(rng_) < phase_.axi_pause; }

    // The next read burst to answer: the oldest due burst at the head of its ID's queue; with
    // pauses on, a random one of those (AXI orders bursts of one ID only).
    void pick_read(uint64_t now) {
        std::vector<unsigned> due;
        for (unsigned id : read_order_) {
            auto& q = reads_[id];
            if (!q.empty() && q.front().due <= now) {
                bool seen = false;
                for (unsigned d : due) seen |= d == id;
                if (!seen) due.push_back(id);
            }
            if (due.size() >= 4) break;
        }
        if (due.empty()) return;
        unsigned id = due[phase_.axi_pause > 0 ? rng_() % due.size() : 0];
        reading_ = &reads_[id].front();
        for (auto it = read_order_.begin(); it != read_order_.end(); ++it) {
            if (*it == id) { read_order_.erase(it); break; }
        }
    }

    void offer_read(Vnf_controller* top) {
        uint64_t address = reading_->address + (uint64_t)reading_->done * LINE_BYTES;
        Words w = {0};
        bool fault = faulty(address);
        auto found = lines.find(address);
        if (!fault && found != lines.end()) set_bytes(w, 0, found->second.bytes, 8 * LINE_BYTES);
        store(AXI(rdata), w);
        AXI(rid) = reading_->id;
        AXI(rresp) = fault ? RESP_SLVERR : 0;
        AXI(rlast) = reading_->done + 1 == reading_->beats;
        errors += fault;
        r_on_bus_ = true;
    }

    void take_write(Vnf_controller* top, uint64_t now) {
        Burst& b = writes_.front();
        uint64_t address = b.address + (uint64_t)b.done * LINE_BYTES;
        Words data, strobe;
        load(AXI(wdata), data);
        load(AXI(wstrb), strobe);
        if (faulty(address)) {
            b.resp = RESP_SLVERR;
            errors++;
        } else {
            Line& line = lines[address];
            for (int i = 0; i < LINE_BYTES; ++i)
                if (get_bits(strobe, i, 1)) line.bytes[i] = (uint8_t)get_bits(data, 8 * i, 8);
        }
        bool last = ++b.done == b.beats;
        if (last != (bool)AXI(wlast)) {
            std::fprintf(stderr, "clock %lu: WLAST %d on beat %u of a %u-beat burst\n", now,
                         (int)AXI(wlast), b.done, b.beats);
            wlast_errors++;
        }
        write_beats++;
        next_beat_ = now + phase_.interval;
        if (last) {
            responses_.push_back(Response{b.id, b.resp, now + phase_.latency});
            writes_.pop_front();
        }
    }

public:
    uint64_t wlast_errors = 0;

private:
    std::vector<std::pair<uint64_t, uint64_t>> faults_;
    std::mt19937_64& rng_;
    std::uniform_real_distribution<double> unit_{0.0, 1.0};
    Phase phase_{};
    std::unordered_map<unsigned, std::deque<Burst>> reads_;
    std::deque<unsigned> read_order_;  // the IDs of the read bursts, in the order of their AR
    Burst* reading_ = nullptr;
    bool r_on_bus_ = false, b_on_bus_ = false;
    std::deque<Burst> writes_;
    std::deque<Response> responses_;
    uint64_t next_beat_ = 0;
};

// The CXL.mem host: sends the ops, collects the answers.
class Host {
public:
    struct Stalls { uint64_t req = 0, rwd = 0, ndr = 0, drs = 0; } stalls;
    uint64_t sent = 0, answered = 0, unknown_tags = 0;
    std::vector<std::string> errors;

    Host(const Op* ops, Answer* answers, uint64_t count, std::mt19937_64& rng)
        : ops_(ops), answers_(answers), count_(count), rng_(rng), done_(count, 0),
          inflight_(1u << 16, -1) {
        for (uint64_t i = 0; i < count; ++i) queue_[ops[i].channel].push_back(i);
    }
    void set_phase(const Phase& p) { phase_ = p; }
    uint64_t next_op() const { return std::min(head_op(0), head_op(1)); }
    bool finished() const { return watermark_ == count_; }
    uint64_t outstanding() const { return outstanding_; }
    uint64_t watermark() const { return watermark_; }

    void drive(Vnf_controller* top, uint64_t now) {
        offer(top, 0, now);
        offer(top, 1, now);
        PORT(m2s_req, valid) = holding_[0] >= 0;
        PORT(m2s_rwd, valid) = holding_[1] >= 0;
        PORT(s2m_ndr, ready) = !(phase_.s2m_stall > 0 && unit_(rng_) < phase_.s2m_stall);
        PORT(s2m_drs, ready) = !(phase_.s2m_stall > 0 && unit_(rng_) < phase_.s2m_stall);
    }

    void sample(Vnf_controller* top, uint64_t now) {
        for (int c = 0; c < 2; ++c) {
            bool valid = c ? PORT(m2s_rwd, valid) : PORT(m2s_req, valid);
            bool ready = c ? PORT(m2s_rwd, ready) : PORT(m2s_req, ready);
            if (valid && ready) sent_one(c, now);
            (c ? stalls.rwd : stalls.req) += valid && !ready;
        }
        Words w;
        if (PORT(s2m_ndr, valid) && PORT(s2m_ndr, ready)) {
            load(PORT(s2m_ndr, payload), w);
            receive(1, w, now);
        }
        if (PORT(s2m_drs, valid) && PORT(s2m_drs, ready)) {
            load(PORT(s2m_drs, payload), w);
            receive(2, w, now);
        }
        stalls.ndr += PORT(s2m_ndr, valid) && !PORT(s2m_ndr, ready);
        stalls.drs += PORT(s2m_drs, valid) && !PORT(s2m_drs, ready);
    }

    bool moved(Vnf_controller* top) const {
        return (PORT(m2s_req, valid) && PORT(m2s_req, ready))
            || (PORT(m2s_rwd, valid) && PORT(m2s_rwd, ready))
            || (PORT(s2m_ndr, valid) && PORT(s2m_ndr, ready))
            || (PORT(s2m_drs, valid) && PORT(s2m_drs, ready));
    }

private:
    uint64_t head_op(int c) const {
        return head_[c] < queue_[c].size() ? queue_[c][head_[c]] : count_;
    }

    // Put the channel's next op on the bus when it may go: the ops it waits for are answered,
    // its tag is free, fewer than OUTSTANDING are owed, and the host does not idle.
    void offer(Vnf_controller* top, int c, uint64_t now) {
        if (holding_[c] >= 0 || head_[c] >= queue_[c].size()) return;
        uint64_t i = queue_[c][head_[c]];
        const Op& op = ops_[i];
        if (op.after >= 0 && (uint64_t)op.after >= watermark_) return;
        if (inflight_[op.tag] >= 0 || outstanding_ >= OUTSTANDING) return;
        if (phase_.host_idle > 0 && unit_(rng_) < phase_.host_idle) return;
        Words w = {0};
        if (c == 0) {
            set_bits(w, REQ_OPCODE_OFFSET, REQ_OPCODE_WIDTH, op.opcode);
            set_bits(w, REQ_META_FIELD_OFFSET, REQ_META_FIELD_WIDTH, op.meta_field);
            set_bits(w, REQ_TAG_OFFSET, REQ_TAG_WIDTH, op.tag);
            set_bits(w, REQ_ADDRESS_OFFSET, REQ_ADDRESS_WIDTH, op.address);
            set_bits(w, REQ_LD_ID_OFFSET, REQ_LD_ID_WIDTH, op.ld_id);
            store(PORT(m2s_req, payload), w);
        } else {
            set_bits(w, RWD_OPCODE_OFFSET, RWD_OPCODE_WIDTH, op.opcode);
            set_bits(w, RWD_META_FIELD_OFFSET, RWD_META_FIELD_WIDTH, op.meta_field);
            set_bits(w, RWD_TAG_OFFSET, RWD_TAG_WIDTH, op.tag);
            set_bits(w, RWD_ADDRESS_OFFSET, RWD_ADDRESS_WIDTH, op.address);
            set_bits(w, RWD_POISON_OFFSET, RWD_POISON_WIDTH, op.poison);
            set_bits(w, RWD_LD_ID_OFFSET, RWD_LD_ID_WIDTH, op.ld_id);
            set_bytes(w, RWD_BYTE_ENABLE_OFFSET, op.byte_enable, RWD_BYTE_ENABLE_WIDTH);
            set_bytes(w, RWD_DATA_OFFSET, op.data, 8 * LINE_BYTES);
            store(PORT(m2s_rwd, payload), w);
        }
        holding_[c] = (int64_t)i;
    }

    void sent_one(int c, uint64_t now) {
        uint64_t i = (uint64_t)holding_[c];
        holding_[c] = -1;
        head_[c]++;
        sent++;
        answers_[i].issued = now;
        answers_[i].polls++;
        if (ops_[i].answered) {
            inflight_[ops_[i].tag] = (int64_t)i;
            outstanding_++;
        } else {
            complete(i);
        }
    }

    void receive(int channel, const uint32_t* w, uint64_t now) {
        bool drs = channel == 2;
        unsigned tag = (unsigned)get_bits(w, drs ? DRS_TAG_OFFSET : NDR_TAG_OFFSET,
                                          drs ? DRS_TAG_WIDTH : NDR_TAG_WIDTH);
        int64_t i = inflight_[tag];
        if (i < 0) {
            unknown_tags++;
            if (errors.size() < 10)
                errors.push_back("clock " + std::to_string(now) + ": a response with tag " +
                                 std::to_string(tag) + ", which no outstanding request holds");
            return;
        }
        Answer& a = answers_[i];
        a.channel = (uint8_t)channel;
        a.count++;
        a.answered = now;
        a.tag = (uint16_t)tag;
        if (drs) {
            a.opcode = (uint8_t)get_bits(w, DRS_OPCODE_OFFSET, DRS_OPCODE_WIDTH);
            a.poison = (uint8_t)get_bits(w, DRS_POISON_OFFSET, DRS_POISON_WIDTH);
            a.dev_load = (uint8_t)get_bits(w, DRS_DEV_LOAD_OFFSET, DRS_DEV_LOAD_WIDTH);
            a.ld_id = (uint8_t)get_bits(w, DRS_LD_ID_OFFSET, DRS_LD_ID_WIDTH);
            a.meta_field = (uint8_t)get_bits(w, DRS_META_FIELD_OFFSET, DRS_META_FIELD_WIDTH);
            get_bytes(w, DRS_DATA_OFFSET, a.data, LINE_BYTES);
        } else {
            a.opcode = (uint8_t)get_bits(w, NDR_OPCODE_OFFSET, NDR_OPCODE_WIDTH);
            a.dev_load = (uint8_t)get_bits(w, NDR_DEV_LOAD_OFFSET, NDR_DEV_LOAD_WIDTH);
            a.ld_id = (uint8_t)get_bits(w, NDR_LD_ID_OFFSET, NDR_LD_ID_WIDTH);
            a.meta_field = (uint8_t)get_bits(w, NDR_META_FIELD_OFFSET, NDR_META_FIELD_WIDTH);
        }
        inflight_[tag] = -1;
        outstanding_--;
        answered++;
        if (ops_[i].poll && !polled_out(ops_[i], a)) {
            // Send it again: it is a fence, so it is still the last Req sent.
            if (holding_[0] >= 0 || queue_[0][head_[0] - 1] != (uint64_t)i) {
                errors.push_back("clock " + std::to_string(now) + ": op " + std::to_string(i) +
                                 " polls, but a later request went out before its answer");
                complete((uint64_t)i);
                return;
            }
            head_[0]--;
            return;
        }
        complete((uint64_t)i);
    }

    // Whether a poll is over: the bits of its mask (its data) read zero, or it gave up.
    bool polled_out(const Op& op, Answer& a) {
        bool busy = false;
        for (int k = 0; k < LINE_BYTES; ++k) busy |= (a.data[k] & op.data[k]) != 0;
        if (busy && a.polls >= MAX_POLLS && errors.size() < 10)
            errors.push_back("a poll of address field " + std::to_string(op.address) +
                             " still read busy after " + std::to_string(MAX_POLLS) + " reads");
        return !busy || a.polls >= MAX_POLLS;
    }

    void complete(uint64_t i) {
        done_[i] = 1;
        while (watermark_ < count_ && done_[watermark_]) watermark_++;
    }

    const Op* ops_;
    Answer* answers_;
    uint64_t count_;
    std::mt19937_64& rng_;
    std::uniform_real_distribution<double> unit_{0.0, 1.0};
    Phase phase_{};
    std::vector<uint64_t> queue_[2];
    std::size_t head_[2] = {0, 0};
    int64_t holding_[2] = {-1, -1};
    std::vector<uint8_t> done_;
    std::vector<int64_t> inflight_;
    uint64_t outstanding_ = 0, watermark_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6 && argc != 9) {
        std::fprintf(stderr, "usage: %s PLAN OPS ANSWERS SUMMARY MEMORY [WAVES FROM TO]\n",
                     argv[0]);
        return 2;
    }
    Plan plan = read_plan(argv[1]);
    const Op* ops = map_file<Op>(argv[2], plan.ops, false);
    Answer* answers = map_file<Answer>(argv[3], plan.ops, true);
    std::mt19937_64 rng(plan.seed);

    auto* context = new VerilatedContext;
    context->commandArgs(1, argv);
    auto* top = new Vnf_controller{context};
    uint64_t waves_from = 0, waves_to = 0;
#if VM_TRACE
    VerilatedFstC* trace = nullptr;
    if (argc == 9) {
        context->traceEverOn(true);
        trace = new VerilatedFstC;
        top->trace(trace, 99);
        trace->open(argv[6]);
        waves_from = std::strtoull(argv[7], nullptr, 10);
        waves_to = std::strtoull(argv[8], nullptr, 10);
    }
#else
    if (argc == 9) {
        std::fprintf(stderr, "this harness was built without tracing: no waveform\n");
        return 2;
    }
#endif

    Host host(ops, answers, plan.ops, rng);
    Memory memory(plan, rng);
    std::size_t phase = 0;
    host.set_phase(plan.phases[0]);
    memory.set_phase(plan.phases[0]);

    // The register port is idle: the harness configures the device through the CXL.mem window.
    top->s_axil_arvalid = 0;
    top->s_axil_awvalid = 0;
    top->s_axil_wvalid = 0;
    top->s_axil_bready = 1;
    top->s_axil_rready = 1;
    top->aresetn = 0;
    top->aclk = 0;
    top->eval();
    for (int i = 0; i < 4; ++i) {
        top->aclk = 1; top->eval();
        top->aclk = 0; top->eval();
    }
    top->aresetn = 1;

    auto started = std::chrono::steady_clock::now();
    uint64_t now = 0, quiet = 0, host_quiet = 0;
    bool stalled = false;
    uint64_t finished_at = 0;
    while (!host.finished() || (quiet < 64 && now < finished_at + STALL_LIMIT)) {
        if (!host.finished()) finished_at = now + 1;
        while (phase + 1 < plan.phases.size() && host.next_op() >= plan.phases[phase + 1].first_op) {
            ++phase;
            host.set_phase(plan.phases[phase]);
            memory.set_phase(plan.phases[phase]);
        }
        top->aclk = 0;
        host.drive(top, now);
        memory.drive(top, now);
        top->eval();
#if VM_TRACE
        if (trace && now >= waves_from && now <= waves_to) trace->dump(2 * now);
#endif
        bool host_moved = host.moved(top), moved = host_moved || memory.moved(top);
        host.sample(top, now);
        memory.sample(top, now);
        top->aclk = 1;
        top->eval();
#if VM_TRACE
        if (trace && now >= waves_from && now <= waves_to) trace->dump(2 * now + 1);
#endif
        ++now;
        quiet = moved ? 0 : quiet + 1;
        // Stalled: the host has neither sent nor received for STALL_LIMIT clocks while owed
        // answers (the device may be busy with memory all that while: a livelock counts too).
        host_quiet = host_moved ? 0 : host_quiet + 1;
        if (!host.finished() && host_quiet >= STALL_LIMIT) { stalled = true; break; }
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
#if VM_TRACE
    if (trace) trace->close();
#endif

    FILE* dump = std::fopen(argv[5], "wb");
    if (!dump) { std::perror(argv[5]); return 2; }
    for (auto& entry : memory.lines) {
        std::fwrite(&entry.first, sizeof(uint64_t), 1, dump);
        std::fwrite(entry.second.bytes, 1, LINE_BYTES, dump);
    }
    std::fclose(dump);

    FILE* out = std::fopen(argv[4], "w");
    if (!out) { std::perror(argv[4]); return 2; }
    std::fprintf(out, "{\"clocks\": %lu, \"seconds\": %.3f, \"ops\": %lu, \"sent\": %lu, "
                 "\"answered\": %lu, \"answered_in_order_up_to\": %lu, \"outstanding\": %lu, "
                 "\"stalled\": %s, \"unknown_tags\": %lu, \"wlast_errors\": %lu, "
                 "\"memory_errors\": %lu, \"read_beats\": %lu, \"write_beats\": %lu, "
                 "\"memory_lines\": %zu, \"stall_clocks\": {\"m2s_req\": %lu, \"m2s_rwd\": %lu, "
                 "\"s2m_ndr\": %lu, \"s2m_drs\": %lu, \"ar\": %lu, \"aw\": %lu, \"w\": %lu, "
                 "\"r\": %lu, \"b\": %lu}, \"errors\": [",
                 now, seconds, plan.ops, host.sent, host.answered, host.watermark(),
                 host.outstanding(), stalled ? "true" : "false", host.unknown_tags,
                 memory.wlast_errors, memory.errors, memory.read_beats, memory.write_beats,
                 memory.lines.size(), host.stalls.req, host.stalls.rwd, host.stalls.ndr,
                 host.stalls.drs, memory.stalls.ar, memory.stalls.aw, memory.stalls.w,
                 memory.stalls.r, memory.stalls.b);
    for (std::size_t i = 0; i < host.errors.size(); ++i)
        std::fprintf(out, "%s\"%s\"", i ? ", " : "", host.errors[i].c_str());
    std::fprintf(out, "]}\n");
    std::fclose(out);
    top->final();
    delete top;
    delete context;
    return stalled ? 1 : 0;
}

#include "core/search/kernel_search.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/opt/optimize.h"
#include "core/opt/search_space.h"
#include "core/search/made_up_inputs.h"
#include "core/util/large_stack.h"
#include "core/util/log.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Reductions summed in another order than the kernel as written differ in the last bits.
Tolerance ToleranceFor(Scalar scalar) {
  switch (scalar) {
    case Scalar::kFloat32:
    case Scalar::kFloat64:
      return {1e-3, 1e-3};
    case Scalar::kFloat16:
    case Scalar::kBfloat16:
      return {2e-2, 2e-2};
    case Scalar::kFp8E4M3:
    case Scalar::kFp8E5M2:
    case Scalar::kFp8E4M3Fnuz:
    case Scalar::kFp8E5M2Fnuz:
      return {0.25, 0.25};
    default:
      return {0, 0};
  }
}

struct Built {
  std::vector<Opt> opts;
  std::vector<Opt> applied;  // tournaments: as OptimizeKernel applied them
  ProgramSpec spec;
  CompiledKernel compiled;
  std::shared_ptr<Program> program;
  LaunchDims dims;
  std::vector<int64_t> vals;
};

class Searcher {
 public:
  Searcher(const Device& device, const std::shared_ptr<const KernelAst>& ast,
           const SearchOptions& options)
      : device_(device),
        pair_(device.compilers().front()),
        ast_(ast),
        options_(options),
        target_(OptTargetFor(device.spec().base_device_key(), pair_.compiler->Target(),
                             device.threads())),
        deadline_(Deadline(options)) {}

  ~Searcher() {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i] != nullptr) device_.allocator().Free(buffers_[i], pristine_[i].size());
    }
  }

  absl::StatusOr<TournamentResult> RunTournament(const std::vector<std::vector<Opt>>& candidates) {
    TournamentResult result;
    result.seconds.assign(candidates.size(), std::numeric_limits<double>::infinity());
    std::vector<std::shared_ptr<const Built>> built(candidates.size());
    if (options_.verify_candidates) {
      // The scratch first: a kernel too large to time is known before anything compiles.
      UOPD_ASSIGN_OR_RETURN(const ProgramSpec written, Render(ast_));
      UOPD_RETURN_IF_ERROR(ChargeScratch(written));
      UOPD_RETURN_IF_ERROR(AllocateScratch(written));
      UOPD_RETURN_IF_ERROR(Restore());
      UOPD_ASSIGN_OR_RETURN(Built reference, Build(ast_, {}));
      if (absl::Status ran = Execute(reference); ran.ok()) {
        UOPD_RETURN_IF_ERROR(KeepExpectedOutputs(reference));
        result.verified = true;
      } else if (!absl::IsOutOfRange(ran)) {
        return ran;
      }  // OUT_OF_RANGE: a gather whose made-up indices leave its table; nothing to compare with
    }
    for (size_t i = 0; i < candidates.size() && !OutOfTime(); ++i) {
      auto optimized =
          OptimizeKernel(ast_, target_, OptimizeRequest{OptMode::kOpts, candidates[i]});
      if (!optimized.ok()) continue;
      absl::StatusOr<Built> b = Build(optimized->ast, candidates[i]);
      if (!b.ok()) continue;
      b->applied = optimized->applied;
      if (buffers_.empty()) {
        UOPD_RETURN_IF_ERROR(ChargeScratch(b->spec));
        UOPD_RETURN_IF_ERROR(AllocateScratch(b->spec));
        UOPD_RETURN_IF_ERROR(Restore());
      }
      if (!Execute(*b).ok()) continue;  // the first run warms caches and code
      if (result.verified) {
        absl::StatusOr<bool> matches = Compare(*b);
        if (!matches.ok()) continue;  // it did not run: not a wrong answer
        if (!*matches) {
          result.differed.push_back(i);
          continue;
        }
      }
      built[i] = std::make_shared<const Built>(*std::move(b));
    }
    // Interleaved rounds: a moment of load on a shared machine slows one sample, not one
    // candidate.
    for (int round = 0; round < 3 && !OutOfTime(); ++round) {
      for (size_t i = 0; i < built.size() && !OutOfTime(); ++i) {
        if (built[i] != nullptr) result.seconds[i] = std::min(result.seconds[i], Sample(*built[i]));
      }
    }
    if (options_.stop != nullptr && options_.stop->stopped()) {
      result.stopped = true;
      return result;
    }
    result.out_of_time = OutOfTime();
    result.winner = static_cast<size_t>(
        std::min_element(result.seconds.begin(), result.seconds.end()) - result.seconds.begin());
    if (const std::shared_ptr<const Built>& won = built[result.winner]; won != nullptr) {
      result.winner_applied = won->applied;
      result.winner_spec = won->spec;
      result.winner_kernel = won->compiled;
    }
    return result;
  }

  absl::StatusOr<SearchResult> Run() {
    SearchResult result;
    // The kernel as written: the reference every candidate's outputs must match.
    UOPD_ASSIGN_OR_RETURN(Built reference, Build(ast_, {}));
    UOPD_RETURN_IF_ERROR(ChargeScratch(reference.spec));
    if (absl::Status s = AllocateScratch(reference.spec); !s.ok()) {
      result.note = std::string(s.message());
      return Fallback(result);
    }
    UOPD_RETURN_IF_ERROR(Restore());
    const auto start = Clock::now();
    if (absl::Status ran = Execute(reference); !ran.ok()) {
      // A gather whose made-up indices leave its table stops at a bounds check where the
      // client's data may not: nothing can be verified on these inputs, the heuristics answer.
      if (!absl::IsOutOfRange(ran)) return ran;
      result.note = absl::StrCat("the kernel as written stopped on made-up inputs (", ran.message(),
                                 "): the heuristics' opts");
      return Fallback(result);
    }
    const double reference_seconds = SecondsSince(start);
    UOPD_RETURN_IF_ERROR(KeepExpectedOutputs(reference));
    absl::flat_hash_set<std::string> seen = {ast_->hash};
    std::vector<Timed> beam;
    // The heuristics first: the answer when nothing beats them.
    OptimizeRequest heuristic_request;
    heuristic_request.mode = OptMode::kHeuristic;
    UOPD_ASSIGN_OR_RETURN(OptimizedKernel heuristic,
                          OptimizeKernel(ast_, target_, heuristic_request));
    if (!heuristic.applied.empty() && seen.insert(heuristic.ast->hash).second) {
      if (auto timed = Evaluate(heuristic.applied, heuristic.ast, &result)) {
        result.heuristic_seconds = timed->seconds;
        heuristic_ = std::make_unique<Timed>(*timed);
        beam.push_back(*timed);
      }
    }
    // The heuristics' shorter prefixes: the neighbourhood the rounds explore (another row
    // count, another vector width) is reached from them.
    for (size_t n = 1; n < heuristic.applied.size() && !OutOfTime(); ++n) {
      std::vector<Opt> prefix(heuristic.applied.begin(), heuristic.applied.begin() + n);
      auto optimized = OptimizeKernel(ast_, target_, OptimizeRequest{OptMode::kOpts, prefix});
      if (!optimized.ok() || !seen.insert(optimized->ast->hash).second) continue;
      if (auto timed = Evaluate(std::move(prefix), optimized->ast, &result)) beam.push_back(*timed);
    }
    if (best_ != nullptr && reference_seconds > 3 * best_->seconds) {
      beam.push_back({{}, reference_seconds});  // far behind: not timed again
    } else if (auto timed = Evaluate({}, ast_, &result)) {
      beam.push_back(*timed);
    }
    if (best_ == nullptr) return absl::InternalError("the kernel as written did not run");
    result.note = "converged";
    result.converged = true;
    std::sort(beam.begin(), beam.end(),
              [](const Timed& a, const Timed& b) { return a.seconds < b.seconds; });
    beam.resize(std::min<size_t>(beam.size(), options_.beam_width));
    while (!beam.empty()) {
      const double best_before = best_->seconds;
      std::vector<Timed> next;
      for (const Timed& member : beam) {
        // Members far behind the best are not worth extending (the kernel as written, when
        // the heuristics gain much: its extensions are slow to time and rarely win).
        if (member.seconds > 10 * best_->seconds) continue;
        for (SearchCandidate& c : ExtendByOneOpt(ast_, target_, member.opts, seen)) {
          if (OutOfTime()) break;
          if (auto timed = Evaluate(std::move(c.opts), c.ast, &result)) {
            timed->built = nullptr;  // the beam keeps opts, not loaded programs
            next.push_back(*std::move(timed));
          }
        }
      }
      if (OutOfTime()) {
        result.converged = false;
        result.stopped = options_.stop != nullptr && options_.stop->stopped();
        result.note = result.stopped ? "stopped by the caller" : "time budget spent";
        break;
      }
      if (next.empty()) break;
      std::sort(next.begin(), next.end(),
                [](const Timed& a, const Timed& b) { return a.seconds < b.seconds; });
      next.resize(std::min<size_t>(next.size(), options_.beam_width));
      beam = std::move(next);
      if (best_->seconds > 0.99 * best_before) break;  // less than 1% better
    }
    // Confirm the winner against the heuristics, interleaved: on a shared machine a candidate
    // can win one timing by luck. The heuristics stay unless the winner is 3% faster again.
    if (heuristic_ != nullptr && best_->built != heuristic_->built) {
      double best = best_->seconds, baseline = heuristic_->seconds;
      for (int round = 0; round < 5 && !(options_.stop != nullptr && options_.stop->stopped());
           ++round) {
        best = std::min(best, Sample(*best_->built));
        baseline = std::min(baseline, Sample(*heuristic_->built));
      }
      if (best > 0.97 * baseline) {
        best_ = std::make_unique<Timed>(*heuristic_);
        best_->seconds = baseline;
        result.note += "; the heuristics (the best candidate was not faster when timed again)";
      }
      result.heuristic_seconds = baseline;
    }
    result.opts = best_->opts;
    result.seconds = best_->seconds;
    return result;
  }

 private:
  struct Timed {
    std::vector<Opt> opts;
    double seconds = 0;
    std::shared_ptr<const Built> built;  // the loaded candidate (null: not kept)
  };

  // The budget, or half the time the caller's call has left (the other half compiles and
  // runs what the search chose), whichever ends first.
  static Clock::time_point Deadline(const SearchOptions& options) {
    auto budget =
        std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(options.budget));
    if (options.stop != nullptr) {
      const auto left = options.stop->deadline() - std::chrono::system_clock::now();
      if (left < 2 * budget) budget = std::chrono::duration_cast<Clock::duration>(left / 2);
    }
    return Clock::now() + std::max(budget, Clock::duration::zero());
  }

  bool OutOfTime() const {
    return Clock::now() >= deadline_ || (options_.stop != nullptr && options_.stop->stopped());
  }

  // Without scratch memory there is nothing to time: the heuristics' opts are the answer.
  absl::StatusOr<SearchResult> Fallback(SearchResult result) {
    OptimizeRequest request;
    request.mode = OptMode::kHeuristic;
    UOPD_ASSIGN_OR_RETURN(OptimizedKernel heuristic, OptimizeKernel(ast_, target_, request));
    result.opts = heuristic.applied;
    return result;
  }

  // Named as the compile path names it (caching_program_source's Render), so a tournament's
  // winner is the very program a compile of its opts would produce.
  absl::StatusOr<ProgramSpec> Render(const std::shared_ptr<const KernelAst>& ast) const {
    return OnCompileStack(
        [&] { return pair_.renderer->Render(ast, ast->DefaultName(), options_.render); });
  }

  absl::StatusOr<Built> Build(const std::shared_ptr<const KernelAst>& ast, std::vector<Opt> opts) {
    Built built;
    built.opts = std::move(opts);
    UOPD_ASSIGN_OR_RETURN(built.spec, Render(ast));
    built.spec.ast = ast;
    UOPD_ASSIGN_OR_RETURN(built.compiled,
                          pair_.compiler->Compile(built.spec, CompileOptions{options_.stop}));
    UOPD_ASSIGN_OR_RETURN(built.program, device_.runtime().Load(built.compiled, built.spec));
    // Variables at the middle of their range, as tinygrad's BEAM times them.
    absl::flat_hash_map<std::string, int64_t> vars;
    for (const VarInfo& v : built.spec.vars) vars[v.name] = v.min + (v.max - v.min) / 2;
    UOPD_ASSIGN_OR_RETURN(built.dims, built.spec.launch_dims(vars));
    built.vals.assign(built.spec.var_names.size(), 0);
    for (size_t i = 0; i < built.spec.var_names.size(); ++i) {
      if (auto it = vars.find(built.spec.var_names[i]); it != vars.end())
        built.vals[i] = it->second;
    }
    return built;
  }

  // The bytes of scratch `spec`'s buffers take, or FAILED_PRECONDITION when they do not fit
  // options_.max_scratch_bytes (the server's bound on any search: its answer is then the
  // heuristics', for everyone, every time).
  absl::StatusOr<int64_t> ScratchBytes(const ProgramSpec& spec) const {
    int64_t total = 0;
    for (const BufferParam& b : spec.globals) {
      const int item = std::max(1, ScalarItemSize(b.dtype.scalar));
      if (b.size <= 0 || b.size > (options_.max_scratch_bytes - total) / item) {
        return absl::FailedPreconditionError(
            absl::StrCat("buffer slot ", b.slot, " does not fit the search's scratch memory"));
      }
      total += b.size * item;
    }
    return total;
  }

  // Charges the caller's quota for the scratch on the device and its pristine copy (the
  // reference's outputs are at most as much again): a search, or a timing of candidates, is
  // memory its caller asked for. RESOURCE_EXHAUSTED naming the quota when it does not fit: the
  // caller's error, not an answer to record for everyone.
  absl::Status ChargeScratch(const ProgramSpec& spec) {
    absl::StatusOr<int64_t> bytes = ScratchBytes(spec);
    if (!bytes.ok() || options_.stop == nullptr) return absl::OkStatus();
    absl::StatusOr<std::shared_ptr<const void>> charge = options_.stop->ChargeScratch(2 * *bytes);
    if (!charge.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat("the search's scratch memory (", 2 * *bytes,
                                                       " bytes): ", charge.status().message()));
    }
    scratch_charge_ = *std::move(charge);
    return absl::OkStatus();
  }

  absl::Status AllocateScratch(const ProgramSpec& spec) {
    UOPD_RETURN_IF_ERROR(ScratchBytes(spec).status());
    buffers_.assign(spec.buf_count, nullptr);
    pristine_.assign(spec.buf_count, "");
    std::mt19937_64 rng(0x5eed);
    for (const BufferParam& b : spec.globals) {
      const int item = std::max(1, ScalarItemSize(b.dtype.scalar));
      std::string& bytes = pristine_[b.slot];
      bytes.resize(b.size * item);
      for (int64_t i = 0; i < b.size; ++i) FillMadeUpElement(b.dtype.scalar, rng, &bytes[i * item]);
      UOPD_ASSIGN_OR_RETURN(buffers_[b.slot], device_.allocator().Allocate(bytes.size()));
    }
    return absl::OkStatus();
  }

  absl::Status Restore() {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i] == nullptr) continue;
      UOPD_RETURN_IF_ERROR(
          device_.allocator().CopyIn(buffers_[i], pristine_[i].data(), pristine_[i].size()));
    }
    return absl::OkStatus();
  }

  absl::Status Execute(const Built& built) {
    return built.program->Execute(buffers_, built.vals, built.dims, options_.stop);
  }

  // Compiles and times one candidate; it becomes the best if it is the fastest yet and its
  // outputs match the reference. Nothing when it does not compile or run.
  std::optional<Timed> Evaluate(std::vector<Opt> opts, const std::shared_ptr<const KernelAst>& ast,
                                SearchResult* result) {
    absl::StatusOr<Built> built = Build(ast, std::move(opts));
    if (!built.ok()) return std::nullopt;
    ++result->candidates;
    auto start = Clock::now();
    if (!Execute(*built).ok()) return std::nullopt;
    double seconds = SecondsSince(start);
    if (best_ == nullptr || seconds < 3 * best_->seconds) {
      for (int sample = 0; sample < 3 && !OutOfTime(); ++sample) {
        seconds = std::min(seconds, Sample(*built));
      }
    }
    auto kept = std::make_shared<const Built>(*std::move(built));
    Timed timed{kept->opts, seconds, kept};
    Log(LogLevel::kDebug, "search candidate",
        {{"opts", OptsToString(timed.opts)}, {"us", absl::StrCat(seconds * 1e6)}});
    if (best_ == nullptr || seconds < best_->seconds) {
      if (!Matches(*kept)) return std::nullopt;
      best_ = std::make_unique<Timed>(timed);
    }
    return timed;
  }

  // One timing sample: enough back-to-back runs to measure (2 ms), seconds per run; infinity
  // when a run fails.
  double Sample(const Built& built) {
    auto start = Clock::now();
    if (!Execute(built).ok()) return std::numeric_limits<double>::infinity();
    const double once = SecondsSince(start);
    const int reps = static_cast<int>(std::clamp(2e-3 / std::max(once, 1e-7), 1.0, 1000.0));
    start = Clock::now();
    for (int r = 0; r < reps; ++r) {
      if (!Execute(built).ok()) return std::numeric_limits<double>::infinity();
    }
    return SecondsSince(start) / reps;
  }

  // The outputs `reference` left in the scratch buffers: what every candidate must match.
  absl::Status KeepExpectedOutputs(const Built& reference) {
    for (int slot : reference.spec.outs) {
      std::string bytes(pristine_[slot].size(), '\0');
      UOPD_RETURN_IF_ERROR(device_.allocator().CopyOut(bytes.data(), buffers_[slot], bytes.size()));
      expected_.emplace_back(slot, std::move(bytes));
    }
    return absl::OkStatus();
  }

  // Whether `built`'s outputs on the pristine inputs match the kernel as written's; an error when
  // it could not be run and read.
  absl::StatusOr<bool> Compare(const Built& built) {
    UOPD_RETURN_IF_ERROR(Restore());
    UOPD_RETURN_IF_ERROR(Execute(built));
    for (const auto& [slot, want] : expected_) {
      std::string got(want.size(), '\0');
      UOPD_RETURN_IF_ERROR(device_.allocator().CopyOut(got.data(), buffers_[slot], got.size()));
      const Scalar scalar = SlotScalar(built.spec, slot);
      if (CompareBuffers(scalar, got, want, ToleranceFor(scalar)).has_value()) return false;
    }
    return true;
  }

  bool Matches(const Built& built) {
    absl::StatusOr<bool> matches = Compare(built);
    return matches.ok() && *matches;
  }

  static Scalar SlotScalar(const ProgramSpec& spec, int slot) {
    for (const BufferParam& b : spec.globals) {
      if (b.slot == slot) return b.dtype.scalar;
    }
    return Scalar::kVoid;
  }

  const Device& device_;
  const CompilerPair& pair_;
  std::shared_ptr<const KernelAst> ast_;
  SearchOptions options_;
  OptTarget target_;
  Clock::time_point deadline_;
  std::vector<void*> buffers_;                         // by slot
  std::vector<std::string> pristine_;                  // by slot: the made-up contents
  std::vector<std::pair<int, std::string>> expected_;  // the reference's outputs
  std::unique_ptr<Timed> best_;
  std::unique_ptr<Timed> heuristic_;            // the heuristics' candidate, when they applied opts
  std::shared_ptr<const void> scratch_charge_;  // the caller's quota, charged for the scratch
};

}  // namespace

absl::StatusOr<SearchResult> SearchKernelOpts(const Device& device,
                                              const std::shared_ptr<const KernelAst>& ast,
                                              const SearchOptions& options) {
  return Searcher(device, ast, options).Run();
}

absl::StatusOr<TournamentResult> TimeOptCandidates(const Device& device,
                                                   const std::shared_ptr<const KernelAst>& ast,
                                                   const std::vector<std::vector<Opt>>& candidates,
                                                   const SearchOptions& options) {
  return Searcher(device, ast, options).RunTournament(candidates);
}

}  // namespace uopd

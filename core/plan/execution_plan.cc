#include "core/plan/execution_plan.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

std::string KernelLabel(const PreparedKernel& k) {
  return absl::StrCat("kernel ", k.id, " (", k.ast->Label(), ")");
}

absl::Status BindingError(int id, const std::string& name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("kernel ", id, " (", name, "): ", what));
}

// The buffer slots of a kernel as its caller wrote it: its DEFINE_GLOBALs' highest slot + 1.
int SlotsOf(const KernelAst& ast) {
  int slots = 0;
  for (const UOp* node : Toposort(ast.root)) {
    if (node->op() == Op::kDefineGlobal)
      slots = std::max(slots, static_cast<int>(node->arg().i) + 1);
  }
  return slots;
}

// Checks one kernel's bindings against its spec and fills its buffer fields. The caller binds
// the slots of the AST it sent; the optimized program may use fewer (a buffer its rewrites left
// unread, as in WHERE(x != 0, 0, 0)), and those are bound but not passed.
absl::Status BindBuffers(PreparedKernel& k, const std::vector<BufferView>& buffers) {
  const ProgramSpec& spec = *k.program->spec;
  const int slots = std::max(spec.buf_count, SlotsOf(*k.ast));
  if (static_cast<int>(k.buffer_indices.size()) != slots) {
    return BindingError(
        k.id, k.ast->Label(),
        absl::StrCat("has ", slots, " buffer slots, ", k.buffer_indices.size(), " bound"));
  }
  for (size_t slot = 0; slot < k.buffer_indices.size(); ++slot) {
    const int index = k.buffer_indices[slot];
    if (index < 0 || index >= static_cast<int>(buffers.size())) {
      return BindingError(
          k.id, k.ast->Label(),
          absl::StrCat("slot ", slot, " is bound to buffer ", index, ", which does not exist"));
    }
  }
  k.buffer_ptrs.assign(spec.buf_count, nullptr);
  k.buffer_ids.assign(spec.buf_count, nullptr);
  for (const BufferParam& param : spec.globals) {
    int index = k.buffer_indices[param.slot];
    if (index < 0 || index >= static_cast<int>(buffers.size())) {
      return BindingError(k.id, k.ast->Label(),
                          absl::StrCat("slot ", param.slot, " is bound to buffer ", index,
                                       ", which does not exist"));
    }
    const BufferView& view = buffers[index];
    if (view.dtype != param.dtype.scalar) {
      return BindingError(
          k.id, k.ast->Label(),
          absl::StrCat("slot ", param.slot, " expects ", ScalarName(param.dtype.scalar),
                       ", buffer ", index, " is ", ScalarName(view.dtype)));
    }
    if (view.size < param.size) {
      return BindingError(k.id, k.ast->Label(),
                          absl::StrCat("slot ", param.slot, " needs ", param.size,
                                       " elements, buffer ", index, " has ", view.size));
    }
    if (&view.storage->device() != k.device) {
      return BindingError(
          k.id, k.ast->Label(),
          absl::StrCat("slot ", param.slot, ": buffer ", index, " lives on ",
                       view.storage->device().name(), ", the kernel runs on ", k.device->name()));
    }
    k.buffer_ptrs[param.slot] = view.data();
    k.buffer_ids[param.slot] = view.storage.get();
  }
  // Kernels assume distinct slots do not alias (their pointers are noalias): refuse bindings
  // where the bytes two slots access overlap and either is written.
  absl::flat_hash_set<int> outs(spec.outs.begin(), spec.outs.end());
  auto accessed_bytes = [&](const BufferParam& param) {
    const BufferView& view = buffers[k.buffer_indices[param.slot]];
    const ElementRange elements = param.Accessed();
    const int64_t item = ScalarItemSize(param.dtype.scalar);
    const int64_t offset = static_cast<int64_t>(view.offset);
    return ElementRange{offset + elements.begin * item, offset + elements.end * item};
  };
  for (const BufferParam& a : spec.globals) {
    for (const BufferParam& b : spec.globals) {
      if (a.slot >= b.slot || (!outs.contains(a.slot) && !outs.contains(b.slot))) continue;
      if (buffers[k.buffer_indices[a.slot]].storage != buffers[k.buffer_indices[b.slot]].storage) {
        continue;
      }
      const ElementRange ra = accessed_bytes(a), rb = accessed_bytes(b);
      if (!ra.empty() && !rb.empty() && ra.begin < rb.end && rb.begin < ra.end) {
        return BindingError(k.id, k.ast->Label(),
                            absl::StrCat("slots ", a.slot, " and ", b.slot,
                                         " access overlapping bytes of one buffer and one of "
                                         "them is written"));
      }
    }
  }
  for (int slot : spec.outs) k.output_indices.push_back(k.buffer_indices[slot]);
  return absl::OkStatus();
}

absl::Status BindFixedVars(PreparedKernel& k) {
  const ProgramSpec& spec = *k.program->spec;
  // A program takes its variables' values first, in spec.vars' order (ProgramSpec::var_names):
  // what the lowering gives, and what Bind relies on to place each value.
  for (size_t i = 0; i < spec.vars.size(); ++i) {
    if (i >= spec.var_names.size() || spec.var_names[i] != spec.vars[i].name) {
      return absl::InternalError(absl::StrCat("kernel ", k.id, " (", k.ast->Label(),
                                              "): the program's values do not begin with its "
                                              "variables: variable ",
                                              i, " is '", spec.vars[i].name, "'"));
    }
  }
  for (const auto& [name, value] : k.fixedvars) {
    auto var = std::find_if(spec.vars.begin(), spec.vars.end(),
                            [&](const VarInfo& v) { return v.name == name; });
    if (var == spec.vars.end()) {
      return BindingError(
          k.id, k.ast->Label(),
          absl::StrCat("fixed variable '", name, "' is not a variable of the kernel"));
    }
    if (value < var->min || value > var->max) {
      return BindingError(k.id, k.ast->Label(),
                          absl::StrCat("fixed variable '", name, "' = ", value, " is outside [",
                                       var->min, ", ", var->max, "]"));
    }
    if (value % var->multiple != 0) {
      return BindingError(k.id, k.ast->Label(),
                          absl::StrCat("fixed variable '", name, "' = ", value,
                                       " is not a multiple of ", var->multiple));
    }
  }
  for (const VarInfo& var : spec.vars) {
    if (!k.fixedvars.contains(var.name)) {
      k.runtime_vars.push_back({var.name, var.min, var.max, var.multiple});
    }
  }
  k.vals.assign(spec.var_names.size(), 0);
  for (size_t i = 0; i < spec.vars.size(); ++i) {
    if (auto it = k.fixedvars.find(spec.vars[i].name); it != k.fixedvars.end())
      k.vals[i] = it->second;
  }
  return absl::OkStatus();
}

// A kernel depends on the last writer of everything it touches (RAW, WAW) and, for what it
// writes, on every reader since that writer (WAR). Storage identity: views share their base.
void DeriveDependencies(std::vector<PreparedKernel>& kernels) {
  absl::flat_hash_map<const void*, int> last_writer;
  absl::flat_hash_map<const void*, std::vector<int>> readers;
  for (PreparedKernel& k : kernels) {
    const ProgramSpec& spec = *k.program->spec;
    absl::flat_hash_set<int> deps;
    std::vector<const void*> reads, writes;
    for (int slot : spec.ins) reads.push_back(k.buffer_ids[slot]);
    for (int slot : spec.outs) writes.push_back(k.buffer_ids[slot]);
    for (const void* id : reads) {
      if (auto it = last_writer.find(id); it != last_writer.end()) deps.insert(it->second);
    }
    for (const void* id : writes) {
      if (auto it = last_writer.find(id); it != last_writer.end()) deps.insert(it->second);
      for (int reader : readers[id]) deps.insert(reader);
    }
    deps.erase(k.id);
    k.dependencies.assign(deps.begin(), deps.end());
    std::sort(k.dependencies.begin(), k.dependencies.end());
    for (const void* id : reads) readers[id].push_back(k.id);
    for (const void* id : writes) {
      last_writer[id] = k.id;
      readers[id].clear();
    }
  }
}

// Whether the run must stop starting kernels.
bool StopRequested(const RunOptions& options) {
  return (options.cancelled && options.cancelled()) ||
         (options.stop != nullptr && options.stop->stopped());
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutionPlan>> ExecutionPlan::Build(
    std::vector<BufferView> buffers, std::vector<KernelBinding> kernels, ProgramSource& source,
    ThreadPool* pool, const StopFlag* stop) {
  std::unique_ptr<ExecutionPlan> plan(new ExecutionPlan(std::move(buffers), pool));
  for (size_t i = 0; i < kernels.size(); ++i) {
    KernelBinding& binding = kernels[i];
    if (binding.device == nullptr || binding.ast == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", i, ": no device or AST"));
    }
    PreparedKernel k;
    k.id = static_cast<int>(i);
    k.ast = binding.ast;
    k.device = binding.device;
    k.buffer_indices = std::move(binding.buffers);
    k.fixedvars = std::move(binding.fixedvars);
    auto program = source.Get(*binding.device, binding.ast, binding.optimization, stop);
    if (!program.ok()) {
      return WithContext(program.status(),
                         absl::StrCat("kernel ", i, " (", binding.ast->Label(), ")"));
    }
    k.program = *std::move(program);
    UOPD_RETURN_IF_ERROR(BindBuffers(k, plan->buffers_));
    UOPD_RETURN_IF_ERROR(BindFixedVars(k));
    plan->kernels_.push_back(std::move(k));
  }
  DeriveDependencies(plan->kernels_);
  plan->dependents_.resize(plan->kernels_.size());
  plan->dims_.resize(plan->kernels_.size());
  for (const PreparedKernel& k : plan->kernels_) {
    for (int dep : k.dependencies) plan->dependents_[dep].push_back(k.id);
    // Launch dimensions of kernels without variables never change: evaluate them once.
    if (k.program->spec->vars.empty()) {
      UOPD_ASSIGN_OR_RETURN(plan->dims_[k.id], k.program->spec->launch_dims({}));
    }
  }
  // All on one device that queues work asynchronously: runs go to its queue, not the pool.
  Device* device = plan->kernels_.empty() ? nullptr : plan->kernels_.front().device;
  if (device != nullptr &&
      std::all_of(plan->kernels_.begin(), plan->kernels_.end(),
                  [&](const PreparedKernel& k) { return k.device == device; })) {
    UOPD_ASSIGN_OR_RETURN(plan->queue_, device->runtime().NewLaunchQueue());
  }
  return plan;
}

int64_t ExecutionPlan::BookkeepingBytes() const {
  auto bytes_of = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() *
                                sizeof(typename std::decay_t<decltype(v)>::value_type));
  };
  // A map node: the pair, two pointers and a colour, rounded to the allocator's granule.
  constexpr int64_t kMapNode = 48 + sizeof(std::pair<const std::string, int64_t>);
  int64_t total = sizeof(*this) + bytes_of(buffers_) + bytes_of(kernels_) + bytes_of(dependents_) +
                  bytes_of(dims_);
  for (const PreparedKernel& k : kernels_) {
    total += bytes_of(k.buffer_indices) + bytes_of(k.output_indices) + bytes_of(k.vals) +
             bytes_of(k.dependencies) + bytes_of(k.buffer_ptrs) + bytes_of(k.buffer_ids) +
             bytes_of(k.runtime_vars) + static_cast<int64_t>(k.fixedvars.size()) * kMapNode;
    for (const RuntimeVar& v : k.runtime_vars) total += static_cast<int64_t>(v.name.capacity());
  }
  for (const std::vector<int>& d : dependents_) total += bytes_of(d);
  return total;
}

std::vector<RuntimeVar> ExecutionPlan::RuntimeVars() const {
  std::map<std::string, RuntimeVar> merged;
  for (const PreparedKernel& k : kernels_) {
    for (const RuntimeVar& var : k.runtime_vars) {
      auto [it, inserted] = merged.emplace(var.name, var);
      if (!inserted) {
        it->second.min = std::max(it->second.min, var.min);
        it->second.max = std::min(it->second.max, var.max);
        // Multiples of both; past int64 (large coprime multiples: std::lcm overflowed, UB), no
        // value but 0 is one, which the largest int64 says as well.
        const int64_t a = it->second.multiple, b = var.multiple;
        const Int128 lcm = Int128{a} / std::gcd(a, b) * b;
        it->second.multiple = lcm > std::numeric_limits<int64_t>::max()
                                  ? std::numeric_limits<int64_t>::max()
                                  : static_cast<int64_t>(lcm);
      }
    }
  }
  std::vector<RuntimeVar> out;
  for (auto& [name, var] : merged) out.push_back(var);
  return out;
}

absl::Status ExecutionPlan::Bind(const absl::flat_hash_map<std::string, int64_t>& values) {
  for (const auto& [name, value] : values) {
    bool used = false;
    for (const PreparedKernel& k : kernels_) {
      for (const RuntimeVar& var : k.runtime_vars) used |= var.name == name;
    }
    if (!used) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", name, "' is not a run-time variable of any kernel in the plan"));
    }
  }
  // Validate everything before patching anything: a refused run leaves the plan as it was.
  for (const PreparedKernel& k : kernels_) {
    for (const RuntimeVar& var : k.runtime_vars) {
      auto it = values.find(var.name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(KernelLabel(k), ": no value for variable '", var.name, "'"));
      }
      if (it->second < var.min || it->second > var.max) {
        return absl::InvalidArgumentError(absl::StrCat(KernelLabel(k), ": variable '", var.name,
                                                       "' = ", it->second, " is outside [", var.min,
                                                       ", ", var.max, "]"));
      }
      if (it->second % var.multiple != 0) {
        return absl::InvalidArgumentError(absl::StrCat(KernelLabel(k), ": variable '", var.name,
                                                       "' = ", it->second, " is not a multiple of ",
                                                       var.multiple));
      }
    }
  }
  for (PreparedKernel& k : kernels_) {
    const ProgramSpec& spec = *k.program->spec;
    if (spec.vars.empty()) continue;
    absl::flat_hash_map<std::string, int64_t> merged;
    for (const VarInfo& var : spec.vars) {
      auto fixed = k.fixedvars.find(var.name);
      merged[var.name] = fixed != k.fixedvars.end() ? fixed->second : values.at(var.name);
    }
    // The client's variables come first, in spec.vars' order; the runtime fills what follows
    // (core_id and core_count on the CPU). By position, not name: a client's own variable may
    // be called core_id too, and it must get its value.
    for (size_t i = 0; i < spec.vars.size(); ++i) k.vals[i] = merged.at(spec.vars[i].name);
    UOPD_ASSIGN_OR_RETURN(dims_[k.id], spec.launch_dims(merged));
  }
  return absl::OkStatus();
}

absl::Status ExecutionPlan::Cancelled(int next_kernel) {
  return absl::CancelledError(
      absl::StrCat("the run was cancelled before kernel ", next_kernel, " started"));
}

absl::Status ExecutionPlan::RunKernel(PreparedKernel& k, const StopFlag* stop) {
  absl::Status status = k.program->program->Execute(k.buffer_ptrs, k.vals, dims_[k.id], stop);
  return status.ok() ? status : WithContext(status, KernelLabel(k));
}

absl::StatusOr<std::vector<KernelTiming>> ExecutionPlan::ExecuteWithVars(
    const absl::flat_hash_map<std::string, int64_t>& values, RunOptions options) {
  {
    // A run queued behind another (a plan runs once at a time) still ends when its call does:
    // it held its thread to the end of the run before it, past its deadline (a review helper's
    // finding). The stop flag has no waiters, so the wait looks at it every few milliseconds.
    absl::MutexLock turn(&turn_mu_);
    while (running_) {
      if (StopRequested(options)) {
        return absl::CancelledError("the run was cancelled while waiting for another of the plan");
      }
      turn_mu_.AwaitWithTimeout(absl::Condition(
                                    +[](bool* running) { return !*running; }, &running_),
                                absl::Milliseconds(5));
    }
    running_ = true;
  }
  absl::Cleanup next_turn = [this] {
    absl::MutexLock turn(&turn_mu_);
    running_ = false;
  };
  absl::MutexLock run_lock(&run_mu_);
  absl::StatusOr<std::vector<KernelTiming>> timings = ExecuteLocked(values, options);
  if (timings.ok() && options.after_run) UOPD_RETURN_IF_ERROR(options.after_run());
  return timings;
}

absl::StatusOr<std::vector<KernelTiming>> ExecutionPlan::ExecuteLocked(
    const absl::flat_hash_map<std::string, int64_t>& values, const RunOptions& options) {
  UOPD_RETURN_IF_ERROR(Bind(values));
  const int n = static_cast<int>(kernels_.size());
  const auto start = std::chrono::steady_clock::now();
  auto now_ns = [start] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  };

  if (queue_ != nullptr && !options.sequential) return RunOnQueue(options);

  if (options.sequential || pool_ == nullptr || pool_->size() == 0) {
    std::vector<KernelTiming> timings(n);
    for (PreparedKernel& k : kernels_) {
      if (StopRequested(options)) return Cancelled(k.id);
      timings[k.id].id = k.id;
      timings[k.id].start_ns = now_ns();
      UOPD_RETURN_IF_ERROR(RunKernel(k, options.stop));
      timings[k.id].end_ns = now_ns();
    }
    return timings;
  }

  // Dataflow scheduling: a kernel becomes ready when its last dependency finishes.
  auto run = std::make_shared<RunState>();
  // What this run schedules (kernels, their loops' helpers) carries its tag: the caller helps
  // with those and no one else's.
  ThreadPool::ScopedWork work(run.get());
  run->plan = this;
  run->pool = pool_;
  run->options = options;
  run->start = start;
  run->timings.resize(n);
  run->remaining.resize(n);
  for (const PreparedKernel& k : kernels_) {
    run->remaining[k.id] = static_cast<int>(k.dependencies.size());
    if (k.dependencies.empty()) run->ready.push_back(k.id);
  }
  int initial = static_cast<int>(run->ready.size());
  for (int i = 0; i < std::min(initial - 1, pool_->size()); ++i)
    pool_->Schedule([run] { Drain(run); });
  // The caller works too until every kernel finished or the run stopped: it runs ready kernels
  // and, while kernels run elsewhere, the pool's queued tasks (the helper of a kernel a worker
  // splits across the cores would otherwise wait for a free worker).
  while (true) {
    Drain(run);
    {
      absl::MutexLock lock(&run->mu);
      if (run->finished == n || (!run->error.ok() && run->in_flight == 0)) break;
      if (!run->ready.empty()) continue;
      run->settled.store(false);
    }
    pool_->HelpUntil(run.get(), run->settled);
  }
  absl::MutexLock lock(&run->mu);
  if (!run->error.ok()) return run->error;
  return std::move(run->timings);
}

absl::StatusOr<std::vector<KernelTiming>> ExecutionPlan::RunOnQueue(const RunOptions& options) {
  // Submission order is a topological order: dependencies always have smaller ids.
  absl::Status submitted;
  for (PreparedKernel& k : kernels_) {
    if (StopRequested(options)) {
      submitted = Cancelled(k.id);
      break;
    }
    submitted = queue_->Submit(k.id, *k.program->program, k.buffer_ptrs, k.vals, dims_[k.id],
                               k.dependencies);
    if (!submitted.ok()) {
      submitted = WithContext(submitted, KernelLabel(k));
      break;
    }
  }
  std::vector<KernelTime> times;
  int failed = -1;
  absl::Status finished = queue_->Finish(&times, &failed);
  if (!submitted.ok()) return submitted;
  if (!finished.ok()) {
    return failed >= 0 ? WithContext(finished, KernelLabel(kernels_[failed])) : finished;
  }
  std::vector<KernelTiming> timings(kernels_.size());
  for (size_t i = 0; i < timings.size() && i < times.size(); ++i) {
    timings[i] = {static_cast<int>(i), times[i].start_ns, times[i].end_ns};
  }
  return timings;
}

void ExecutionPlan::Drain(const std::shared_ptr<RunState>& run) {
  // Helpers may start after the run is over: they then find no ready kernel and only touch
  // `run`, which they share. The plan is reached only through a popped kernel, while the caller
  // of ExecuteWithVars is still waiting.
  while (true) {
    int id;
    {
      absl::MutexLock lock(&run->mu);
      if (run->ready.empty() || !run->error.ok()) return;
      id = run->ready.front();
      run->ready.pop_front();
      ++run->in_flight;
    }
    ExecutionPlan& plan = *run->plan;
    KernelTiming& timing = run->timings[id];
    timing.id = id;
    timing.start_ns = run->NowNs();
    absl::Status status = StopRequested(run->options)
                              ? Cancelled(id)
                              : plan.RunKernel(plan.kernels_[id], run->options.stop);
    timing.end_ns = run->NowNs();
    int extra = 0;
    {
      absl::MutexLock lock(&run->mu);
      --run->in_flight;
      ++run->finished;
      if (!status.ok()) {
        if (run->error.ok()) run->error = status;
        run->ready.clear();
      } else {
        for (int next : plan.dependents_[id]) {
          if (--run->remaining[next] == 0) run->ready.push_back(next);
        }
        // This thread takes one of the newly ready kernels; helpers take the rest.
        extra = std::min(static_cast<int>(run->ready.size()) - 1, run->pool->size());
      }
      run->settled.store(true);
    }
    run->pool->Wake();
    for (int i = 0; i < extra; ++i) run->pool->Schedule([run] { Drain(run); });
  }
}

}  // namespace uopd

// The plan value printed from one list of fields (visitFields), as text and as JSON.
#include "plan/plan.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "device/dtypes.h"

namespace collcomm::detail {

namespace {

// Receives the plan's fields in order, each once: both formats are made from this one list.
struct FieldVisitor {
  virtual void text(const char* name, const char* value) = 0;
  virtual void number(const char* name, int64_t value) = 0;
  virtual void unsignedNumber(const char* name, uint64_t value) = 0;
  virtual void boolean(const char* name, bool value) = 0;
  virtual void rings(const char* name, const Plan& plan) = 0;
  virtual void trees(const char* name, const Plan& plan) = 0;

 protected:
  ~FieldVisitor() = default;
};

void visitFields(const Plan& p, FieldVisitor& v) {
  v.text("collective", collName(p.kind));
  v.number("rank", p.rank);
  v.text("device", p.gpu ? "gpu" : "host");
  v.unsignedNumber("bytes", p.bytes);
  v.unsignedNumber("count", p.count);
  v.text("dtype", dtypeName(p.dtype));
  v.number("root", p.root);
  v.number("nranks", p.nranks);
  v.text("algorithm", algorithmName(p.algo));
  v.text("protocol", protocolName(p.proto));
  v.number("channels", p.nChannels);
  v.boolean("on_rings", p.onRings);
  v.unsignedNumber("step_bytes", p.stepBytes);
  v.unsignedNumber("step_elems", p.stepElems);
  v.unsignedNumber("chunk_steps", p.chunkSteps);
  v.unsignedNumber("chunk_elems", p.chunkElems);
  v.unsignedNumber("chunk_bytes", p.chunkBytes);
  v.boolean("stream_results", p.streamResults);
  v.boolean("stream_steps", p.streamSteps);
  v.boolean("stream_steps_always", p.streamStepsAlways);
  v.rings("rings", p);
  v.boolean("on_trees", p.onTrees);
  v.trees("trees", p);
}

bool sameRing(const PlanRing& a, const PlanRing& b, int n) {
  for (int i = 0; i < n; ++i)
    if (a.ranks[i] != b.ranks[i]) return false;
  return true;
}

bool sameTree(const PlanTree& a, const PlanTree& b, int n) {
  for (int i = 0; i < n; ++i)
    if (a.nodes[i].parent != b.nodes[i].parent) return false;
  return true;
}

void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* out, const char* fmt, ...) {
  char buf[64];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, static_cast<size_t>(n) < sizeof(buf) ? static_cast<size_t>(n) : sizeof(buf) - 1);
}

// "AllReduce rank 0: bytes 8, count 2, ..., rings 2x[0 1 2 3]". The collective and rank lead the
// line (the TUNING and PLAN lines have always started so); "device" shows only as " (GPU)".
class TextVisitor final : public FieldVisitor {
 public:
  explicit TextVisitor(std::string* out) : out_(out) {}
  void text(const char* name, const char* value) override {
    if (strcmp(name, "collective") == 0) {
      out_->append(value);
    } else if (strcmp(name, "device") == 0) {
      out_->append(strcmp(value, "gpu") == 0 ? " (GPU):" : ":");
    } else {
      sep(name);
      out_->append(value);
    }
  }
  void number(const char* name, int64_t value) override {
    if (strcmp(name, "rank") == 0) {
      appendf(out_, " rank %" PRId64, value);
      return;
    }
    sep(name);
    appendf(out_, "%" PRId64, value);
  }
  void unsignedNumber(const char* name, uint64_t value) override {
    sep(name);
    appendf(out_, "%" PRIu64, value);
  }
  void rings(const char* name, const Plan& p) override {
    sep(name);
    if (p.rings == nullptr) {
      out_->append("none");
      return;
    }
    for (int c = 0; c < p.nChannels;) {
      int same = 1;
      while (c + same < p.nChannels && sameRing(p.rings[c], p.rings[c + same], p.nranks)) ++same;
      if (c > 0) out_->push_back(' ');
      if (same > 1) appendf(out_, "%dx", same);
      out_->push_back('[');
      for (int i = 0; i < p.nranks; ++i) appendf(out_, i == 0 ? "%d" : " %d", p.rings[c].ranks[i]);
      out_->push_back(']');
      c += same;
    }
  }
  void trees(const char* name, const Plan& p) override {
    if (p.trees == nullptr) return;  // only plans on trees say so
    sep(name);
    for (int c = 0; c < p.nChannels;) {
      int same = 1;
      while (c + same < p.nChannels && sameTree(p.trees[c], p.trees[c + same], p.nranks)) ++same;
      if (c > 0) out_->push_back(' ');
      if (same > 1) appendf(out_, "%dx", same);
      out_->push_back('[');
      for (int i = 0; i < p.nranks; ++i) appendf(out_, i == 0 ? "%d" : " %d", p.trees[c].nodes[i].parent);
      out_->push_back(']');
      c += same;
    }
  }
  void boolean(const char* name, bool value) override {
    if (strcmp(name, "on_trees") == 0 && !value) return;  // only plans on trees say so
    sep(name);
    out_->append(value ? "yes" : "no");
  }

 private:
  void sep(const char* name) {
    out_->append(first_ ? " " : ", ");
    first_ = false;
    out_->append(name);
    out_->push_back(' ');
  }
  std::string* out_;
  bool first_ = true;
};

// {"collective":"AllReduce",...,"rings":[[0,1,2,3]]}: every name and value as it is (names and
// the library's own strings need no escaping).
class JsonVisitor final : public FieldVisitor {
 public:
  explicit JsonVisitor(std::string* out) : out_(out) { out_->push_back('{'); }
  void text(const char* name, const char* value) override {
    key(name);
    out_->push_back('"');
    out_->append(value);
    out_->push_back('"');
  }
  void number(const char* name, int64_t value) override {
    key(name);
    appendf(out_, "%" PRId64, value);
  }
  void unsignedNumber(const char* name, uint64_t value) override {
    key(name);
    appendf(out_, "%" PRIu64, value);
  }
  void boolean(const char* name, bool value) override {
    key(name);
    out_->append(value ? "true" : "false");
  }
  void rings(const char* name, const Plan& p) override {
    key(name);
    out_->push_back('[');
    for (int c = 0; p.rings != nullptr && c < p.nChannels; ++c) {
      out_->append(c == 0 ? "[" : ",[");
      for (int i = 0; i < p.nranks; ++i) appendf(out_, i == 0 ? "%d" : ",%d", p.rings[c].ranks[i]);
      out_->push_back(']');
    }
    out_->push_back(']');
  }
  // [{"root":0,"parents":[-1,0,0,2]}, ...]: per channel, its root and each rank's parent.
  void trees(const char* name, const Plan& p) override {
    key(name);
    out_->push_back('[');
    for (int c = 0; p.trees != nullptr && c < p.nChannels; ++c) {
      appendf(out_, c == 0 ? "{\"root\":%d,\"parents\":[" : ",{\"root\":%d,\"parents\":[", p.trees[c].root);
      for (int i = 0; i < p.nranks; ++i) appendf(out_, i == 0 ? "%d" : ",%d", p.trees[c].nodes[i].parent);
      out_->append("]}");
    }
    out_->push_back(']');
  }
  void close() { out_->push_back('}'); }

 private:
  void key(const char* name) {
    if (!first_) out_->push_back(',');
    first_ = false;
    out_->push_back('"');
    out_->append(name);
    out_->append("\":");
  }
  std::string* out_;
  bool first_ = true;
};

}  // namespace

std::string formatPlanText(const Plan& plan) {
  std::string out;
  TextVisitor v(&out);
  visitFields(plan, v);
  return out;
}

std::string formatPlanJson(const Plan& plan) {
  std::string out;
  JsonVisitor v(&out);
  visitFields(plan, v);
  v.close();
  return out;
}

}  // namespace collcomm::detail

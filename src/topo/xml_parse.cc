// parseXml over libxml2: the maintained parser reads untrusted text; this file only converts its
// tree into XmlElement and turns its errors into one sentence with the line. Setup tier.
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <climits>
#include <memory>
#include <mutex>
#include <string>

#include "topo/xml_tree.h"

namespace collcomm::detail {
namespace {

constexpr int kMaxDepth = 64;

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
struct CtxtFree {
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
};
struct XmlCharFree {
  void operator()(xmlChar* s) const { xmlFree(s); }
};

// libxml2 needs its globals set up once before threads parse concurrently.
void initLibxml() {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
}

std::string trimMessage(const char* msg) {
  std::string s = msg != nullptr ? msg : "malformed XML";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s;
}

Status convert(const xmlNode* node, const std::string& source, int depth, XmlElement* out) {
  if (depth > kMaxDepth)
    return CC_ERROR(Status::kInvalidArgument, "%s line %ld: elements nest deeper than %d levels; a topology file is shallower",
                    source.c_str(), xmlGetLineNo(node), kMaxDepth);
  out->name = reinterpret_cast<const char*>(node->name);
  long line = xmlGetLineNo(node);
  out->line = line > 0 && line < INT_MAX ? static_cast<int>(line) : 0;
  for (const xmlAttr* a = node->properties; a != nullptr; a = a->next) {
    std::unique_ptr<xmlChar, XmlCharFree> value(xmlNodeListGetString(node->doc, a->children, 1));
    out->setAttr(reinterpret_cast<const char*>(a->name),
                 value ? std::string(reinterpret_cast<const char*>(value.get())) : std::string());
  }
  for (const xmlNode* c = node->children; c != nullptr; c = c->next) {
    if (c->type != XML_ELEMENT_NODE) continue;  // text, comments, processing instructions
    XmlElement& child = out->addChild(std::string());
    CC_CHECK(convert(c, source, depth + 1, &child));
  }
  return kOk;
}

// The first error libxml2 reports is the one that names the real problem; later ones follow from
// it ("premature end of data").
struct FirstError {
  bool set = false;
  int line = 0;
  std::string message;
};

void recordFirstError(void* ctx, xmlErrorPtr err) {
  auto* first = static_cast<FirstError*>(ctx);
  if (first->set || err == nullptr || err->level < XML_ERR_ERROR) return;
  first->set = true;
  first->line = err->line;
  first->message = trimMessage(err->message);
}

}  // namespace

Status parseXml(std::string_view text, const std::string& source, XmlElement* root) {
  initLibxml();
  if (text.size() > static_cast<size_t>(INT_MAX))
    return CC_ERROR(Status::kInvalidArgument, "%s is too large to be a topology file", source.c_str());
  std::unique_ptr<xmlParserCtxt, CtxtFree> ctxt(xmlNewParserCtxt());
  if (!ctxt) return CC_ERROR(Status::kSystemError, "could not allocate an XML parser for %s", source.c_str());
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
  FirstError first;
  // Thread-local in libxml2, so concurrent parses do not see each other's handler.
  xmlSetStructuredErrorFunc(&first, recordFirstError);
  std::unique_ptr<xmlDoc, DocFree> doc(
      xmlCtxtReadMemory(ctxt.get(), text.data(), static_cast<int>(text.size()), source.c_str(), nullptr, options));
  xmlSetStructuredErrorFunc(nullptr, nullptr);
  if (!doc || !ctxt->wellFormed) {
    if (!first.set) {
      const xmlError* err = xmlCtxtGetLastError(ctxt.get());
      first.line = err != nullptr ? err->line : 0;
      first.message = trimMessage(err != nullptr ? err->message : nullptr);
    }
    return CC_ERROR(Status::kInvalidArgument, "%s line %d: not well-formed XML (%s); expected NCCL topology XML like <system version=\"1\">...</system>",
                    source.c_str(), first.line, first.message.c_str());
  }
  if (doc->intSubset != nullptr || doc->extSubset != nullptr)
    return CC_ERROR(Status::kInvalidArgument, "%s line %ld: a DOCTYPE is not allowed in a topology file", source.c_str(),
                    doc->intSubset != nullptr ? xmlGetLineNo(reinterpret_cast<xmlNode*>(doc->intSubset)) : 1L);
  const xmlNode* top = xmlDocGetRootElement(doc.get());
  if (top == nullptr)
    return CC_ERROR(Status::kInvalidArgument, "%s: no XML element found; expected <system version=\"1\">", source.c_str());
  XmlElement parsed;
  CC_CHECK(convert(top, source, 0, &parsed));
  *root = std::move(parsed);
  return kOk;
}

}  // namespace collcomm::detail

package otlp

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// encoder writes an OTLP ExportTraceServiceRequest (trace/v1, protobuf)
// straight from the SDK's read-only spans into buffers it keeps from one
// batch to the next. The official exporter first builds the request as
// protobuf message objects, about 18 of them a span, then marshals them:
// at Docket's three spans a task that was the largest part of what
// tracing cost a burn-down (see BENCHMARKS.md). The bytes are the same
// message: TestEncodeMatchesOfficial decodes both and compares them.
//
// Field numbers are those of opentelemetry/proto/trace/v1/trace.proto,
// common/v1/common.proto and resource/v1/resource.proto.
type encoder struct {
	req, rs, ss, span, tmp []byte // one buffer a nesting level
	groups                 []spanGroup
}

// spanGroup is the spans of one resource and instrumentation scope, which
// share a ScopeSpans message.
type spanGroup struct {
	res   *resource.Resource
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
	done  bool // written
}

// encode returns the request for spans; it is valid until the next call.
func (e *encoder) encode(spans []sdktrace.ReadOnlySpan) []byte {
	e.group(spans)
	e.req = e.req[:0]
	for i := range e.groups {
		if e.groups[i].done {
			continue
		}
		// One ResourceSpans a resource, with a ScopeSpans for each of
		// its scopes.
		res := e.groups[i].res
		e.rs = e.rs[:0]
		if res != nil {
			e.rs = appendResource(e.rs, 1, res)
		}
		for j := i; j < len(e.groups); j++ {
			g := &e.groups[j]
			if g.done || !sameResource(g.res, res) {
				continue
			}
			g.done = true
			e.ss = e.ss[:0]
			if g.scope != (instrumentation.Scope{}) {
				e.ss = appendScope(e.ss, 1, g.scope)
			}
			for _, s := range g.spans {
				e.span = e.appendSpan(e.span[:0], s)
				e.ss = appendBytesAlways(e.ss, 2, e.span)
			}
			e.ss = appendString(e.ss, 3, g.scope.SchemaURL)
			e.rs = appendBytesAlways(e.rs, 2, e.ss)
		}
		if res != nil {
			e.rs = appendString(e.rs, 3, res.SchemaURL())
		}
		e.req = appendBytesAlways(e.req, 1, e.rs)
	}
	for i := range e.groups {
		clear(e.groups[i].spans) // the exporter keeps no span
	}
	return e.req
}

// group sorts spans into e.groups by resource and scope, in the order
// each pair was first seen, each group's spans in their order.
func (e *encoder) group(spans []sdktrace.ReadOnlySpan) {
	n := 0 // groups in use
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource(), s.InstrumentationScope()
		at := -1
		for i := range n {
			if g := &e.groups[i]; g.scope == scope && sameResource(g.res, res) {
				at = i
				break
			}
		}
		if at < 0 {
			if n == len(e.groups) {
				e.groups = append(e.groups, spanGroup{})
			}
			at, n = n, n+1
			g := &e.groups[at]
			g.res, g.scope, g.spans, g.done = res, scope, g.spans[:0], false
		}
		e.groups[at].spans = append(e.groups[at].spans, s)
	}
	e.groups = e.groups[:n]
}

func sameResource(a, b *resource.Resource) bool {
	return a == b || (a != nil && b != nil && a.Equivalent() == b.Equivalent())
}

// appendSpan appends the fields of a Span message.
func (e *encoder) appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytesField(b, 1, tid[:])
	b = appendBytesField(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytesField(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	if k := spanKind(s.SpanKind()); k != 0 {
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, k)
	}
	b = appendFixed64(b, 7, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, unixNano(s.EndTime().UnixNano()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendUint32(b, 10, s.DroppedAttributes())
	for _, ev := range s.Events() {
		e.tmp = e.tmp[:0]
		e.tmp = appendFixed64(e.tmp, 1, unixNano(ev.Time.UnixNano()))
		e.tmp = appendString(e.tmp, 2, ev.Name)
		e.tmp = appendKeyValues(e.tmp, 3, ev.Attributes)
		e.tmp = appendUint32(e.tmp, 4, ev.DroppedAttributeCount)
		b = appendBytesField(b, 11, e.tmp)
	}
	b = appendUint32(b, 12, s.DroppedEvents())
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.tmp = e.tmp[:0]
		e.tmp = appendBytesField(e.tmp, 1, ltid[:])
		e.tmp = appendBytesField(e.tmp, 2, lsid[:])
		e.tmp = appendString(e.tmp, 3, l.SpanContext.TraceState().String())
		e.tmp = appendKeyValues(e.tmp, 4, l.Attributes)
		e.tmp = appendUint32(e.tmp, 5, l.DroppedAttributeCount)
		e.tmp = appendFixed32(e.tmp, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = appendBytesField(b, 13, e.tmp)
	}
	b = appendUint32(b, 14, s.DroppedLinks())
	// Status, always present (as the official exporter writes it).
	st := s.Status()
	code := statusCode(st.Code)
	size := sizeString(2, st.Description)
	if code != 0 {
		size += protowire.SizeTag(3) + protowire.SizeVarint(code)
	}
	b = protowire.AppendTag(b, 15, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = appendString(b, 2, st.Description)
	if code != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, code)
	}
	return appendFixed32(b, 16, spanFlags(sc.TraceFlags(), parent))
}

// appendKeyValues appends attrs as repeated KeyValue field num.
func appendKeyValues(b []byte, num protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeKeyValue(kv)))
		b = appendKeyValue(b, kv)
	}
	return b
}

// KeyValue: key = 1, value = 2 (AnyValue, always present).
func sizeKeyValue(kv attribute.KeyValue) int {
	return sizeString(1, string(kv.Key)) + protowire.SizeTag(2) + protowire.SizeBytes(sizeAnyValue(kv.Value))
}

func appendKeyValue(b []byte, kv attribute.KeyValue) []byte {
	b = appendString(b, 1, string(kv.Key))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeAnyValue(kv.Value)))
	return appendAnyValue(b, kv.Value)
}

// AnyValue is a oneof: string_value = 1, bool_value = 2, int_value = 3,
// double_value = 4, array_value = 5 (ArrayValue: values = 1),
// kvlist_value = 6 (KeyValueList: values = 1), bytes_value = 7. A set
// oneof field is written even when it holds its zero value.
func sizeAnyValue(v attribute.Value) int {
	switch v.Type() {
	case attribute.EMPTY:
		return 0
	case attribute.BOOL:
		return protowire.SizeTag(2) + 1
	case attribute.INT64:
		return protowire.SizeTag(3) + protowire.SizeVarint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return protowire.SizeTag(4) + protowire.SizeFixed64()
	case attribute.STRING:
		return protowire.SizeTag(1) + protowire.SizeBytes(len(v.AsString()))
	case attribute.BYTESLICE:
		return protowire.SizeTag(7) + protowire.SizeBytes(len(v.AsByteSlice()))
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		return protowire.SizeTag(5) + protowire.SizeBytes(sizeArray(v))
	case attribute.MAP:
		n := 0
		for _, kv := range v.AsMap() {
			n += protowire.SizeTag(1) + protowire.SizeBytes(sizeKeyValue(kv))
		}
		return protowire.SizeTag(6) + protowire.SizeBytes(n)
	}
	return protowire.SizeTag(1) + protowire.SizeBytes(len("INVALID"))
}

func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.EMPTY:
		return b
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BYTESLICE:
		return appendBytesAlways(b, 7, v.AsByteSlice())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeArray(v)))
		return appendArray(b, v)
	case attribute.MAP:
		n := 0
		for _, kv := range v.AsMap() {
			n += protowire.SizeTag(1) + protowire.SizeBytes(sizeKeyValue(kv))
		}
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		return appendKeyValues(b, 1, v.AsMap())
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, "INVALID")
}

// An ArrayValue's elements, each an AnyValue (values = 1).
func sizeArray(v attribute.Value) int {
	n := 0
	eachElem(v, func(e attribute.Value) { n += protowire.SizeTag(1) + protowire.SizeBytes(sizeAnyValue(e)) })
	return n
}

func appendArray(b []byte, v attribute.Value) []byte {
	eachElem(v, func(e attribute.Value) {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeAnyValue(e)))
		b = appendAnyValue(b, e)
	})
	return b
}

func eachElem(v attribute.Value, f func(attribute.Value)) {
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			f(attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			f(attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			f(attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			f(attribute.StringValue(x))
		}
	case attribute.SLICE:
		for _, x := range v.AsSlice() {
			f(x)
		}
	}
}

// Resource (field num of its parent): attributes = 1,
// dropped_attributes_count = 2. Written, possibly empty, as the official
// exporter does.
func appendResource(b []byte, num protowire.Number, res *resource.Resource) []byte {
	var attrs []attribute.KeyValue
	if res != nil {
		attrs = res.Attributes()
	}
	n := 0
	for _, kv := range attrs {
		n += protowire.SizeTag(1) + protowire.SizeBytes(sizeKeyValue(kv))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	return appendKeyValues(b, 1, attrs)
}

// InstrumentationScope: name = 1, version = 2, attributes = 3.
func appendScope(b []byte, num protowire.Number, s instrumentation.Scope) []byte {
	attrs := s.Attributes.ToSlice()
	n := sizeString(1, s.Name) + sizeString(2, s.Version)
	for _, kv := range attrs {
		n += protowire.SizeTag(3) + protowire.SizeBytes(sizeKeyValue(kv))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = appendString(b, 1, s.Name)
	b = appendString(b, 2, s.Version)
	return appendKeyValues(b, 3, attrs)
}

// spanKind is the proto's SpanKind; the API numbers its kinds alike
// (unspecified 0, internal, server, client, producer, consumer).
func spanKind(k trace.SpanKind) uint64 {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return 0
	}
	return uint64(k)
}

// statusCode is the proto's Status.StatusCode: unset 0, ok 1, error 2
// (the API's codes put Error before Ok).
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// spanFlags are the W3C trace flags, with "whether the parent is remote is
// known" set, and "is remote" when it is.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	const hasIsRemote, isRemote = 0x100, 0x200
	f := uint32(tf) | hasIsRemote
	if parent.IsRemote() {
		f |= isRemote
	}
	return f
}

func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

// Proto3 scalars: a zero value is not written.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func sizeString(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendBytesAlways(b, num, v)
}

func appendBytesAlways(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendUint32(b []byte, num protowire.Number, v int) []byte {
	if v <= 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(min(v, math.MaxUint32)))
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

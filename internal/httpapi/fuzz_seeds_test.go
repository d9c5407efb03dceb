package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docket-dev/docket/internal/fuzzseed"
	"github.com/docket-dev/docket/internal/logtest"
)

// The seed corpora of the fuzz targets. They run in every `go test` from
// testdata/fuzz/<FuzzName>/; TestSeedCorpora keeps those files equal to
// these (rewrite them with go test -run TestSeedCorpora -fuzzseed.update).
// The payload canary sits in every value a client chooses, so a log line
// that quotes one fails the run.

const canary = logtest.Canary

func seed(name string, args ...any) fuzzseed.Seed { return fuzzseed.Seed{Name: name, Args: args} }

// nested returns n opening and n closing brackets: JSON nested n deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// bodySeeds are submission bodies (POST /v1/tasks).
var bodySeeds = []fuzzseed.Seed{
	seed("echo", `{"workflow":"demo.echo","input":{"msg":"`+canary+`"}}`),
	seed("every-field", `{"workflow":"demo.echo","input":["`+canary+`",1,null],"pool":"offline","timeout_ms":1000,"priority":-5,"max_attempts":2}`),
	seed("no-input", `{"workflow":"demo.fail"}`),
	seed("input-null", `{"workflow":"demo.echo","input":null}`),
	seed("whitespace", "\r\n\t {\n\"workflow\" :\t\"demo.echo\" , \"input\" : { \"a\" : \""+canary+"\" } }\n\n"),
	seed("raw-nul-in-string", "{\"workflow\":\"demo.echo\x00\",\"input\":\""+canary+"\"}"),
	seed("raw-nul-between-tokens", "{\"workflow\":\"demo.echo\",\x00\"input\":\""+canary+"\"}"),
	seed("escaped-nul", `{"workflow":"demo.echo","input":"\u0000`+canary+`","pool":"online\u0000"}`),
	seed("escaped-nul-workflow", `{"workflow":"\u0000`+canary+`"}`),
	seed("invalid-utf8-value", "{\"workflow\":\"demo.echo\",\"input\":\"\xff\xfe"+canary+"\"}"),
	seed("invalid-utf8-key", "{\"workflow\":\"demo.echo\",\"\xc3\x28"+canary+"\":1}"),
	seed("overlong-utf8", "{\"workflow\":\"demo.echo\",\"input\":\"\xc0\xaf"+canary+"\"}"),
	seed("lone-surrogate", `{"workflow":"demo.echo","input":"\ud800`+canary+`\udfff"}`),
	seed("bom", "\xef\xbb\xbf{\"workflow\":\"demo.echo\",\"input\":\""+canary+"\"}"),
	seed("timeout-overflows-ns", `{"workflow":"demo.echo","timeout_ms":9223372036855,"input":"`+canary+`"}`),
	seed("timeout-max-ms", `{"workflow":"demo.echo","timeout_ms":9223372036854,"input":"`+canary+`"}`),
	seed("timeout-one-over-24h", `{"workflow":"demo.echo","timeout_ms":86400001}`),
	seed("timeout-exponent", `{"workflow":"demo.echo","timeout_ms":1e3}`),
	seed("timeout-huge-exponent", `{"workflow":"demo.echo","timeout_ms":1e400}`),
	seed("timeout-fraction", `{"workflow":"demo.echo","timeout_ms":1.5}`),
	seed("timeout-negative-zero", `{"workflow":"demo.echo","timeout_ms":-0}`),
	seed("timeout-negative", `{"workflow":"demo.echo","timeout_ms":-1}`),
	seed("priority-past-int64", `{"workflow":"demo.echo","priority":99999999999999999999}`),
	seed("priority-below-int64", `{"workflow":"demo.echo","priority":-9223372036854775809}`),
	seed("priority-bounds", `{"workflow":"demo.echo","priority":1000,"max_attempts":25}`),
	seed("priority-out-of-range", `{"workflow":"demo.echo","priority":1001,"max_attempts":26}`),
	seed("priority-string", `{"workflow":"demo.echo","priority":"1"}`),
	seed("priority-bool", `{"workflow":"demo.echo","priority":true}`),
	seed("input-huge-number", `{"workflow":"demo.echo","input":1e999999999}`),
	seed("input-long-number", `{"workflow":"demo.echo","input":`+strings.Repeat("9", 5000)+`}`),
	seed("duplicate-workflow", `{"workflow":"demo.echo","workflow":"demo.fail","input":"`+canary+`"}`),
	seed("duplicate-input", `{"workflow":"demo.echo","input":"`+canary+`","input":"x"}`),
	seed("duplicate-by-escape", `{"workflow":"demo.echo","work\u0066low":"demo.fail"}`),
	seed("key-by-escape", `{"\u0077orkflow":"demo.echo","input":"`+canary+`"}`),
	seed("duplicate-in-input", `{"workflow":"demo.echo","input":{"a":"`+canary+`","a":2}}`),
	seed("nested-10000", `{"workflow":"demo.echo","input":`+nested(10000)+`}`),
	seed("nested-10001", `{"workflow":"demo.echo","input":`+nested(10001)+`}`),
	seed("nested-100000", `{"workflow":"demo.echo","input":`+nested(100000)+`}`),
	seed("nested-objects", `{"workflow":"demo.echo","input":`+strings.Repeat(`{"a":`, 20000)+`"`+canary+`"`+strings.Repeat("}", 20000)+`}`),
	seed("unclosed-nesting", `{"workflow":"demo.echo","input":`+strings.Repeat("[", 50000)),
	seed("one-mib", oneMiBBody()),
	seed("over-one-mib", `{"workflow":"demo.echo","input":"`+canary+strings.Repeat("x", 1<<20)+`"}`),
	seed("lookalike-cyrillic", `{"wоrkflow":"demo.echo","input":"`+canary+`"}`),
	seed("lookalike-fullwidth", `{"ｗorkflow":"demo.echo"}`),
	seed("lookalike-zero-width", "{\"workflow\u200b\":\"demo.echo\"}"),
	seed("lookalike-case", `{"Workflow":"demo.echo","INPUT":"`+canary+`"}`),
	seed("lookalike-space", `{"workflow ":"demo.echo"}`),
	seed("lookalike-value", `{"workflow":"demо.echo","pool":"оnline"}`),
	seed("unknown-tenant", `{"workflow":"demo.echo","tenant":"globex","author":"mallory","id":"`+canary+`"}`),
	seed("unknown-canary-field", `{"workflow":"demo.echo","`+canary+`":1}`),
	seed("unknown-long-field", `{"workflow":"demo.echo","`+strings.Repeat("f", 65)+canary+`":1}`),
	seed("unknown-workflow", `{"workflow":"demo.`+canary+`"}`),
	seed("workflow-number", `{"workflow":7}`),
	seed("workflow-null", `{"workflow":null}`),
	seed("workflow-object", `{"workflow":{"name":"demo.echo"}}`),
	seed("workflow-empty", `{"workflow":""}`),
	seed("pool-unknown", `{"workflow":"demo.echo","pool":"`+canary+`"}`),
	seed("empty", ``),
	seed("spaces", "   \n"),
	seed("null", `null`),
	seed("array", `[{"workflow":"demo.echo"}]`),
	seed("string", `"`+canary+`"`),
	seed("empty-object", `{}`),
	seed("open-brace", `{`),
	seed("close-brace", `}`),
	seed("truncated", `{"workflow":"demo.echo","input":{"a":"`+canary),
	seed("trailing-garbage", `{"workflow":"demo.echo"} `+canary),
	seed("two-objects", `{"workflow":"demo.echo"}{"workflow":"demo.fail"}`),
	seed("comment", `{"workflow":"demo.echo" /* `+canary+` */}`),
	seed("single-quotes", `{'workflow':'demo.echo'}`),
	seed("trailing-comma", `{"workflow":"demo.echo",}`),
	seed("nan", `{"workflow":"demo.echo","input":NaN}`),
}

// oneMiBBody is a submission body of exactly 1 MiB, the default limit.
func oneMiBBody() string {
	head := `{"workflow":"demo.echo","input":"` + canary
	tail := `"}`
	return head + strings.Repeat("y", 1<<20-len(head)-len(tail)) + tail
}

// contentTypes go with the body seeds of FuzzSubmit.
var contentTypes = []string{"", "application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain",
	"application/json;;", "application/json\x00", "application/jsonx", "application/json; charset=" + canary}

// submitSeeds pairs each body with a content type.
func submitSeeds() []fuzzseed.Seed {
	out := make([]fuzzseed.Seed, len(bodySeeds))
	for i, s := range bodySeeds {
		out[i] = fuzzseed.Seed{Name: s.Name, Args: []any{[]byte(s.Args[0].(string)), contentTypes[i%len(contentTypes)]}}
	}
	return out
}

// decodeSeeds are the body seeds as the decoders' single argument.
func decodeSeeds(seeds []fuzzseed.Seed) []fuzzseed.Seed {
	out := make([]fuzzseed.Seed, len(seeds))
	for i, s := range seeds {
		out[i] = fuzzseed.Seed{Name: s.Name, Args: []any{[]byte(s.Args[0].(string))}}
	}
	return out
}

// item is one batch task with its idempotency key.
func item(key, rest string) string {
	return `{"idempotency_key":"` + key + `",` + rest + `}`
}

// items returns n valid tasks whose input pads each to about size bytes.
func items(n, size int, prefix string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = item(fmt.Sprintf("%s-%s-%d", canary, prefix, i), `"workflow":"demo.echo","input":"`+canary+strings.Repeat("z", size)+`"`)
	}
	return strings.Join(out, ",")
}

// batchSeeds are batch bodies (POST /v1/tasks/batch).
var batchSeeds = []fuzzseed.Seed{
	seed("two", `{"tasks":[`+item(canary+"-a", `"workflow":"demo.echo","input":{"msg":"`+canary+`"}`)+`,`+item(canary+"-b", `"workflow":"demo.fail","pool":"offline","priority":3`)+`]}`),
	seed("same-key-twice", `{"tasks":[`+item(canary+"-same", `"workflow":"demo.echo","input":"`+canary+`"`)+`,`+item(canary+"-same", `"workflow":"demo.echo","input":"`+canary+`"`)+`]}`),
	seed("same-key-other-body", `{"tasks":[`+item(canary+"-conflict", `"workflow":"demo.echo","input":1`)+`,`+item(canary+"-conflict", `"workflow":"demo.echo","input":2`)+`]}`),
	seed("one-bad-item", `{"tasks":[`+item(canary+"-ok", `"workflow":"demo.echo"`)+`,{"workflow":"demo.echo","tenant":"globex"},`+item(canary+"-unknown", `"workflow":"demo.`+canary+`"`)+`]}`),
	seed("item-not-object", `{"tasks":[1,"`+canary+`",null,[],true]}`),
	seed("key-missing", `{"tasks":[{"workflow":"demo.echo","input":"`+canary+`"}]}`),
	seed("key-empty", `{"tasks":[`+item("", `"workflow":"demo.echo"`)+`]}`),
	seed("key-space", `{"tasks":[`+item(canary+" x", `"workflow":"demo.echo"`)+`]}`),
	seed("key-256", `{"tasks":[`+item(strings.Repeat("k", 243)+canary, `"workflow":"demo.echo"`)+`]}`),
	seed("key-255", `{"tasks":[`+item(strings.Repeat("k", 242)+canary, `"workflow":"demo.echo"`)+`]}`),
	seed("key-escaped-nul", `{"tasks":[`+item(`\u0000`+canary, `"workflow":"demo.echo"`)+`]}`),
	seed("key-unicode", `{"tasks":[`+item("ключ-"+canary, `"workflow":"demo.echo"`)+`]}`),
	seed("key-number", `{"tasks":[{"idempotency_key":7,"workflow":"demo.echo"}]}`),
	seed("key-twice", `{"tasks":[{"idempotency_key":"a","idempotency_key":"`+canary+`","workflow":"demo.echo"}]}`),
	seed("key-header-spelling", `{"tasks":[{"Idempotency-Key":"`+canary+`","workflow":"demo.echo"}]}`),
	seed("empty-tasks", `{"tasks":[]}`),
	seed("tasks-null", `{"tasks":null}`),
	seed("tasks-object", `{"tasks":{"0":`+item(canary, `"workflow":"demo.echo"`)+`}}`),
	seed("tasks-missing", `{}`),
	seed("tasks-twice", `{"tasks":[],"tasks":[`+item(canary+"-t", `"workflow":"demo.echo"`)+`]}`),
	seed("tasks-lookalike", `{"tаsks":[`+item(canary+"-l", `"workflow":"demo.echo"`)+`]}`),
	seed("extra-member", `{"tasks":[`+item(canary+"-x", `"workflow":"demo.echo"`)+`],"tenant":"globex"}`),
	seed("max-items", `{"tasks":[`+items(1000, 0, "max")+`]}`),
	seed("over-max-items", `{"tasks":[`+items(1001, 0, "over")+`]}`),
	seed("over-one-mib", `{"tasks":[`+items(500, 2200, "big")+`]}`),
	seed("item-over-one-mib", `{"tasks":[`+items(1, 1<<20, "huge")+`,`+items(1, 10, "small")+`]}`),
	seed("nested-item", `{"tasks":[`+item(canary+"-n", `"workflow":"demo.echo","input":`+nested(10001))+`]}`),
	seed("nested-tasks", `{"tasks":`+nested(20000)+`}`),
	seed("raw-nul", "{\"tasks\":[\x00"+item(canary+"-z", `"workflow":"demo.echo"`)+"]}"),
	seed("invalid-utf8", "{\"tasks\":["+item(canary+"-u", "\"workflow\":\"demo.echo\",\"input\":\"\xff\"")+"]}"),
	seed("huge-numbers", `{"tasks":[`+item(canary+"-h", `"workflow":"demo.echo","timeout_ms":9223372036855,"priority":1e400`)+`]}`),
	seed("array-body", `[`+item(canary, `"workflow":"demo.echo"`)+`]`),
	seed("trailing", `{"tasks":[`+item(canary+"-tr", `"workflow":"demo.echo"`)+`]} {}`),
}

// headerSeeds are (Authorization, Idempotency-Key, traceparent, repeat)
// for FuzzHeaders; KEY in Authorization stands for the stack's key, and
// repeat's bits send a header twice.
var headerSeeds = []fuzzseed.Seed{
	seed("valid", "Bearer KEY", canary+"-1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", uint16(0)),
	seed("scheme-lowercase", "bearer KEY", canary+"-2", "", uint16(0)),
	seed("scheme-uppercase-spaces", "  BEARER   KEY  ", canary+"-3", "", uint16(0)),
	seed("scheme-tab", "Bearer\tKEY", canary+"-4", "", uint16(0)),
	seed("scheme-basic", "Basic KEY", canary+"-5", "", uint16(0)),
	seed("scheme-only", "Bearer", canary+"-6", "", uint16(0)),
	seed("scheme-space", "Bearer ", canary+"-7", "", uint16(0)),
	seed("key-twice", "Bearer KEY KEY", canary+"-8", "", uint16(0)),
	seed("key-nul", "Bearer KEY\x00", canary+"-9", "", uint16(0)),
	seed("key-canary", "Bearer "+canary, canary+"-10", "", uint16(0)),
	seed("key-invalid-utf8", "Bearer \xff\xfe"+canary, canary+"-11", "", uint16(0)),
	seed("key-long", "Bearer "+strings.Repeat("k", 8000)+canary, canary+"-12", "", uint16(0)),
	seed("authorization-twice", "Bearer KEY", canary+"-13", "", uint16(1)),
	seed("authorization-empty", "", canary+"-14", "", uint16(0)),
	seed("idem-empty", "Bearer KEY", "", "", uint16(0)),
	seed("idem-space", "Bearer KEY", canary+" x", "", uint16(0)),
	seed("idem-255", "Bearer KEY", strings.Repeat("k", 255-len(canary))+canary, "", uint16(0)),
	seed("idem-256", "Bearer KEY", strings.Repeat("k", 256-len(canary))+canary, "", uint16(0)),
	seed("idem-nul", "Bearer KEY", canary+"\x00", "", uint16(0)),
	seed("idem-del", "Bearer KEY", canary+"\x7f", "", uint16(0)),
	seed("idem-unicode", "Bearer KEY", "ключ-"+canary, "", uint16(0)),
	seed("idem-invalid-utf8", "Bearer KEY", canary+"\xff", "", uint16(0)),
	seed("idem-twice", "Bearer KEY", canary+"-15", "", uint16(2)),
	seed("trace-uppercase", "Bearer KEY", canary+"-16", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", uint16(0)),
	seed("trace-zero-trace-id", "Bearer KEY", canary+"-17", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", uint16(0)),
	seed("trace-zero-parent", "Bearer KEY", canary+"-18", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", uint16(0)),
	seed("trace-version-ff", "Bearer KEY", canary+"-19", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", uint16(0)),
	seed("trace-future-version", "Bearer KEY", canary+"-20", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"+canary, uint16(0)),
	seed("trace-short", "Bearer KEY", canary+"-21", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", uint16(0)),
	seed("trace-long", "Bearer KEY", canary+"-22", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011", uint16(0)),
	seed("trace-canary", "Bearer KEY", canary+"-23", "00-"+canary+"-00f067aa0ba902b7-01", uint16(0)),
	seed("trace-nul", "Bearer KEY", canary+"-24", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\x00", uint16(0)),
	seed("trace-twice", "Bearer KEY", canary+"-25", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", uint16(4)),
	seed("everything-twice", "Bearer KEY", canary+"-26", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", uint16(7)),
}

// listSeeds are raw query strings of GET /v1/tasks; $0 to $9 stand for
// the IDs of the fixture's own tasks, $g for another tenant's.
var listSeeds = []fuzzseed.Seed{
	seed("none", ""),
	seed("limit-1", "limit=1"),
	seed("limit-500", "limit=500"),
	seed("limit-501", "limit=501"),
	seed("limit-0", "limit=0"),
	seed("limit-negative", "limit=-1"),
	seed("limit-huge", "limit=99999999999999999999"),
	seed("limit-exponent", "limit=1e2"),
	seed("limit-space", "limit=%201"),
	seed("limit-plus", "limit=+2"),
	seed("limit-leading-zero", "limit=02"),
	seed("limit-nul", "limit=1%00"),
	seed("limit-empty", "limit="),
	seed("limit-twice", "limit=1&limit=2"),
	seed("state-queued", "state=queued"),
	seed("state-cancelled", "state=cancelled&limit=3"),
	seed("state-running", "state=running"),
	seed("state-upper", "state=QUEUED"),
	seed("state-nul", "state=queued%00"),
	seed("state-empty", "state="),
	seed("state-canary", "state="+canary),
	seed("pool-offline", "pool=offline"),
	seed("pool-nul", "pool=online%00"),
	seed("pool-lookalike", "pool=%D0%BEnline"),
	seed("workflow-echo", "workflow=demo.echo"),
	seed("workflow-fail-cancelled", "workflow=demo.fail&state=cancelled&limit=2"),
	seed("workflow-after", "workflow=demo.echo&after=$4&pool=offline"),
	seed("workflow-unknown", "workflow=images.resize"),
	seed("workflow-empty", "workflow="),
	seed("workflow-upper", "workflow=Demo.Echo"),
	seed("workflow-trailing-dot", "workflow=demo."),
	seed("workflow-129", "workflow="+strings.Repeat("a", 129)),
	seed("workflow-128", "workflow="+strings.Repeat("a", 128)),
	seed("workflow-canary", "workflow="+canary),
	seed("workflow-sql", "workflow=demo.echo%27%20OR%20%271%27%3D%271"),
	seed("workflow-twice", "workflow=demo.echo&workflow=demo.fail"),
	seed("after-own", "after=$3"),
	seed("after-own-filtered", "after=$7&limit=2&state=queued&pool=online"),
	seed("after-other-tenant", "after=$g"),
	seed("after-nul", "after=%00"),
	seed("after-max", "after=ffffffff-ffff-ffff-ffff-ffffffffffff"),
	seed("after-zero", "after=00000000-0000-0000-0000-000000000000"),
	seed("after-upper", "after=FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"),
	seed("after-canary", "after="+canary),
	seed("after-sql", "after=%27%20OR%201%3D1%20--"),
	seed("after-empty", "after=&limit=1"),
	seed("after-long", "after="+strings.Repeat("a", 5000)),
	seed("unknown-tenant", "tenant=globex"),
	seed("unknown-canary", canary+"=1"),
	seed("semicolon", "limit=1;after=$3"),
	seed("bad-escape", "after=%zz"),
	seed("ampersands", "&&&"),
	seed("invalid-utf8", "state=\xff\xfe"),
	seed("raw-nul", "limit=1\x00"),
}

// waitSeeds are (task ID, raw query) of GET /v1/tasks/{id}.
var waitSeeds = []fuzzseed.Seed{
	seed("wait-10s", "0190c3f4-6b2a-7c1d-9e3f-4a5b6c7d8e9f", "wait=10s"),
	seed("no-wait", "t-1", ""),
	seed("wait-zero", "t-1", "wait=0s"),
	seed("wait-bare-zero", "t-1", "wait=0"),
	seed("wait-max", "t-1", "wait=60s"),
	seed("wait-over-max", "t-1", "wait=60.000000001s"),
	seed("wait-hour", "t-1", "wait=1h"),
	seed("wait-negative", "t-1", "wait=-1s"),
	seed("wait-negative-zero", "t-1", "wait=-0s"),
	seed("wait-plus", "t-1", "wait=%2B5s"),
	seed("wait-fraction", "t-1", "wait=.5s"),
	seed("wait-micro", "t-1", "wait=1%C2%B5s"),
	seed("wait-compound", "t-1", "wait=1m0.5s"),
	seed("wait-overflow", "t-1", "wait=9223372036854775808ns"),
	seed("wait-huge-hours", "t-1", "wait=2562048h"),
	seed("wait-no-unit", "t-1", "wait=5"),
	seed("wait-empty", "t-1", "wait="),
	seed("wait-nul", "t-1", "wait=1s%00"),
	seed("wait-canary", "t-1", "wait="+canary),
	seed("wait-twice", "t-1", "wait=1s&wait=2s"),
	seed("wait-and-unknown", "t-1", "wait=1s&tenant=globex"),
	seed("wait-bad-escape", "t-1", "wait=%zz"),
	seed("id-canary", canary, "wait=1s"),
	seed("id-nul", "t\x00"+canary, ""),
	seed("id-space", "t "+canary, ""),
	seed("id-invalid-utf8", "\xff"+canary, ""),
	seed("id-128", strings.Repeat("a", 128-len(canary))+canary, ""),
	seed("id-129", strings.Repeat("a", 129-len(canary))+canary, ""),
	seed("id-slash", "a/"+canary, ""),
	seed("id-dot-dot", "..", "wait=1s"),
	seed("id-dot", ".", ""),
	seed("id-percent", "%2F"+canary, ""),
	seed("id-empty", "", "wait=1s"),
	seed("id-unicode", "задача-"+canary, ""),
}

func TestSeedCorpora(t *testing.T) {
	fuzzseed.Sync(t, "FuzzDecodeSubmission", decodeSeeds(bodySeeds))
	fuzzseed.Sync(t, "FuzzSubmit", submitSeeds())
	fuzzseed.Sync(t, "FuzzDecodeBatch", decodeSeeds(batchSeeds))
	fuzzseed.Sync(t, "FuzzSubmitBatch", decodeSeeds(batchSeeds))
	fuzzseed.Sync(t, "FuzzHeaders", headerSeeds)
	fuzzseed.Sync(t, "FuzzListQuery", listSeeds)
	fuzzseed.Sync(t, "FuzzWait", waitSeeds)
}

package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contract validates requests and answers against the OpenAPI document a
// server serves at /openapi.json, and records which operations were
// exercised.
type contract struct {
	t      *testing.T
	doc    *openapi3.T
	router routers.Router
	seen   map[string]bool // operationId → exercised
}

func init() {
	// The dashboard's files are text the validator need not parse.
	for _, ct := range []string{"text/html", "text/css", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}

// loadContract reads, checks and routes the document served by baseURL.
func loadContract(t *testing.T, baseURL string) *contract {
	t.Helper()
	r := call(t, baseURL, request{method: http.MethodGet, path: "/openapi.json"})
	r.wantStatus(t, http.StatusOK)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.body)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.json is version %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("route openapi.json: %v", err)
	}
	return &contract{t: t, doc: doc, router: router, seen: map[string]bool{}}
}

// bearerFormat is the document's security check: an Authorization header
// of the Bearer scheme. Whether the key is known is the server's to say.
func bearerFormat(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, key, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return errors.New("no bearer key")
	}
	return nil
}

// validity says whether a request is meant to match the document.
type validity bool

const (
	valid   validity = true
	invalid validity = false // a request the document itself refuses (the server must too)
)

// do validates req against the document (it must match when want is
// valid, and must not when invalid), sends it to baseURL and validates the
// answer: status documented for the operation, headers, body.
func (c *contract) do(baseURL string, req request, want validity) response {
	c.t.Helper()
	hr := c.httpRequest(baseURL, req)
	route, params, err := c.router.FindRoute(hr)
	if err != nil {
		c.t.Fatalf("%s %s: no operation in openapi.json: %v", req.method, req.path, err)
	}
	c.seen[route.Operation.OperationID] = true
	opts := &openapi3filter.Options{AuthenticationFunc: bearerFormat, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route, Options: opts}
	err = openapi3filter.ValidateRequest(context.Background(), in)
	switch {
	case want == valid && err != nil:
		c.t.Errorf("%s %s: the request does not match openapi.json: %v", req.method, req.path, err)
	case want == invalid && err == nil:
		c.t.Errorf("%s %s: openapi.json accepts a request the test sends as invalid", req.method, req.path)
	}
	resp := call(c.t, baseURL, req)
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.status, Header: resp.header,
		Body: io.NopCloser(bytes.NewReader(resp.body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		c.t.Errorf("%s %s: the answer %d does not match openapi.json: %v\nbody: %.300s", req.method, req.path, resp.status, err, resp.body)
	}
	return resp
}

func (c *contract) httpRequest(baseURL string, req request) *http.Request {
	c.t.Helper()
	u, err := url.Parse(baseURL + req.path)
	if err != nil {
		c.t.Fatal(err)
	}
	var body io.Reader = http.NoBody
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr, err := http.NewRequest(req.method, u.String(), body)
	if err != nil {
		c.t.Fatal(err)
	}
	if req.key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.key)
	}
	if req.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	return hr
}

// unexercised returns the document's operations no request reached.
func (c *contract) unexercised() []string {
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !c.seen[op.OperationID] {
				out = append(out, method+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

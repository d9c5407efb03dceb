package quality

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonSchemaRule passes when the text is JSON that validates against a
// JSON Schema. The schema is compiled when the rule set is parsed, so a bad
// schema is refused at publish time rather than failing tasks later.
type jsonSchemaRule struct {
	schema *jsonschema.Schema
}

// Bounds of a json_schema rule's schema. Compiling a schema takes more
// than linear time in its depth and breadth (a schema nested 800 deep took
// a second, 3,000 deep minutes; 16,000 properties two seconds), and every
// worker that loads the rule set compiles it, so both are bounded at
// publish time, well above what real schemas need.
const (
	MaxSchemaDepth = 64     // nesting of objects and arrays
	MaxSchemaNodes = 10_000 // objects, arrays, member names and scalars
)

// schemaURL names the rule's schema inside its private compiler.
const schemaURL = "urn:docket:quality:schema"

// noLoader refuses every external reference. The library's default loader
// reads file:// URLs, and a published schema must not be able to make a
// worker read its local files; the standard meta-schemas are built into the
// library and still resolve.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not allowed")
}

func buildJSONSchema(f fields) (checker, error) {
	raw, ok := f["schema"]
	if !ok {
		return nil, errors.New("schema: required")
	}
	if err := checkSchemaSize(raw); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("schema: must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &jsonSchemaRule{schema: sch}, nil
}

// checkSchemaSize refuses a schema document deeper than MaxSchemaDepth or
// larger than MaxSchemaNodes, before the compiler sees it.
func checkSchemaSize(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, nodes := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxSchemaDepth {
				return fmt.Errorf("nests deeper than %d levels", MaxSchemaDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
			continue
		}
		nodes++
		if nodes > MaxSchemaNodes {
			return fmt.Errorf("has more than %d JSON values and member names", MaxSchemaNodes)
		}
	}
}

func (r *jsonSchemaRule) check(in Input) outcome {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(in.Text))
	if err != nil {
		return outcome{reason: "not valid JSON"}
	}
	err = r.schema.Validate(v)
	if err == nil {
		return outcome{passed: true, reason: "matches schema"}
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return outcome{reason: "does not match schema"}
	}
	return outcome{reason: "does not match schema at " + keywordLocation(verr)}
}

// keywordLocation returns where in the schema a failure arose
// ("/properties/title/type"). It points into the schema, which is
// configuration; the library's own messages are not used because they
// quote instance values and property names taken from the text. Of several
// failures it names the least location: the library orders causes by map
// iteration, and one input must always get the same reason.
func keywordLocation(verr *jsonschema.ValidationError) string {
	if len(verr.Causes) == 0 {
		return leafLocation(verr)
	}
	least := ""
	for i, c := range verr.Causes {
		if loc := keywordLocation(c); i == 0 || loc < least {
			least = loc
		}
	}
	return least
}

// leafLocation is the keyword location of a failure without causes.
func leafLocation(verr *jsonschema.ValidationError) string {
	var sb strings.Builder
	if _, frag, ok := strings.Cut(verr.SchemaURL, "#"); ok {
		sb.WriteString(frag)
	}
	for _, tok := range verr.ErrorKind.KeywordPath() {
		sb.WriteByte('/')
		sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	if sb.Len() == 0 {
		return "/"
	}
	return sb.String()
}

package quality

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonSchemaRule passes when the text is JSON that validates against a
// JSON Schema. The schema is compiled when the rule set is parsed, so a bad
// schema is refused at publish time rather than failing tasks later.
type jsonSchemaRule struct {
	schema *jsonschema.Schema
}

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

// keywordLocation returns where in the schema the first failure arose
// ("/properties/title/type"). It points into the schema, which is
// configuration; the library's own messages are not used because they
// quote instance values and property names taken from the text.
func keywordLocation(verr *jsonschema.ValidationError) string {
	for len(verr.Causes) > 0 {
		verr = verr.Causes[0]
	}
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

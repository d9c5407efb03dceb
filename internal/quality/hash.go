package quality

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash returns the content hash of a rule set file, "sha256:<hex>". It
// hashes the canonical form (the parsed document re-encoded compactly, with
// object keys sorted), so reindenting or reordering keys keeps the hash while
// any change of content changes it. Hash refuses a file that Parse refuses:
// only valid rule sets get a hash worth pinning.
func Hash(data []byte) (string, error) {
	rs, err := Parse(data)
	if err != nil {
		return "", err
	}
	return rs.hash, nil
}

// contentHash hashes the canonical form of a JSON document that Parse has
// already accepted.
func contentHash(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay as written ("0.50" is not rewritten to 0.5); a float64
	// round trip could otherwise make two different texts collide or one
	// text hash differently across encoders.
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	canonical, err := json.Marshal(doc) // maps encode with sorted keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

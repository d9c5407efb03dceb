package dockettype

import "regexp"

// MaxWorkflowNameLen is the longest workflow name, in bytes.
const MaxWorkflowNameLen = 128

var workflowNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// ValidWorkflowName reports whether name has the syntax of a workflow's
// name: a lowercase dotted identifier ("images.resize") of at most
// MaxWorkflowNameLen bytes. Built-in and remote workflows share it, and a
// list filter by workflow is checked against it.
func ValidWorkflowName(name string) bool {
	return len(name) <= MaxWorkflowNameLen && workflowNameRE.MatchString(name)
}

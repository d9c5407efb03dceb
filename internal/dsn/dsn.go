// Package dsn names and redacts database connection strings: a SQLite file
// path, a postgres:// URL, or a libpq key=value string.
//
// Redact is what every printed or logged database string goes through, so
// that a password never reaches a terminal, a log or an error message:
//
//	fmt.Printf("database %s\n", dsn.Redact(cfg.DB))
package dsn

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces every secret Redact finds.
const Mask = "xxxxx"

// IsPostgres reports whether s names a PostgreSQL database.
func IsPostgres(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// secretParams are the connection parameters that hold a credential
// (libpq's password and sslpassword; pgx reads the same names).
var secretParams = map[string]bool{"password": true, "sslpassword": true}

// keyValueSecret matches a secret of a key=value string: the value is a
// single-quoted string (with \' and \\ escapes) or runs to the next space.
var keyValueSecret = regexp.MustCompile(`(?i)\b(password|sslpassword)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s]*)`)

// Redact returns s with every credential masked: the password of a URL's
// user information, password and sslpassword query parameters, and the
// same keys in a key=value string. A string that holds none is returned
// unchanged.
func Redact(s string) string {
	if IsPostgres(s) {
		if u, err := url.Parse(s); err == nil {
			return redactURL(u)
		}
		// Unparsable: mask everything after the scheme rather than guess.
		scheme, _, _ := strings.Cut(s, "://")
		return scheme + "://" + Mask
	}
	return keyValueSecret.ReplaceAllString(s, "${1}${2}"+Mask)
}

func redactURL(u *url.URL) string {
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Mask
		} else {
			changed := false
			for name := range q {
				if secretParams[strings.ToLower(name)] {
					q[name] = []string{Mask}
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
	}
	return u.String()
}

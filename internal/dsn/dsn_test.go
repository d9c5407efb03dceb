package dsn

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://bob:s3cret@db:5432/docket", "postgres://bob:xxxxx@db:5432/docket"},
		{"postgresql://bob:s3cret@db/docket?sslmode=disable", "postgresql://bob:xxxxx@db/docket?sslmode=disable"},
		{"postgres://bob@db/docket?password=s3cret&sslmode=disable", "postgres://bob@db/docket?password=xxxxx&sslmode=disable"},
		{"postgres://db/docket?PassWord=s3cret", "postgres://db/docket?PassWord=xxxxx"},
		{"postgres://db/docket?sslpassword=s3cret", "postgres://db/docket?sslpassword=xxxxx"},
		{"postgres://bob:s3cret@db/docket?password=s3cret", "postgres://bob:xxxxx@db/docket?password=xxxxx"},
		{"postgres://u:pw@h/db?password=pw2", "postgres://u:xxxxx@h/db?password=xxxxx"}, // was docket.RedactDB's test
		{"postgres://bob@db/docket", "postgres://bob@db/docket"},
		{"postgres://bob:s3cret@db:badport%zz/docket", "postgres://xxxxx"},
		{"postgres://db/docket?password=s3cret&x=%zz", "postgres://db/docket?xxxxx"},
		{"host=db user=bob password=s3cret dbname=docket", "host=db user=bob password=xxxxx dbname=docket"},
		{"host=db password = 's3 cret\\' more' dbname=docket", "host=db password = xxxxx dbname=docket"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"./docket.db", "./docket.db"},
		{"/var/lib/docket/docket.db", "/var/lib/docket/docket.db"},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		if got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "s3") {
			t.Errorf("Redact(%q) = %q still holds the secret", tt.in, got)
		}
	}
}

func TestIsPostgres(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://x": true, "postgresql://x": true, "./docket.db": false, "host=db": false, "postgres:x": false,
	} {
		if got := IsPostgres(s); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", s, got, want)
		}
	}
}

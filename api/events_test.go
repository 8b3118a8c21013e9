package api

import (
	"net/url"
	"testing"
	"time"
)

func TestEventsQuery(t *testing.T) {
	since := time.Date(2026, 12, 1, 17, 0, 0, 123e6, time.UTC)
	for _, q := range []EventsQuery{{}, {Since: since}, {Since: since, Last: 10, NoFollow: true}, {Last: 3}} {
		v, err := url.ParseQuery(q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseEventsQuery(v)
		if err != nil || !got.Since.Equal(q.Since) || got.Last != q.Last || got.NoFollow != q.NoFollow {
			t.Errorf("%+v: round trip gave %+v, %v", q, got, err)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"since=yesterday", `since "yesterday": not an RFC 3339 time, such as 2026-12-01T17:00:00Z`},
		{"last=0", `last "0": not a count of 1 or more`},
		{"last=x", `last "x": not a count of 1 or more`},
		{"follow=maybe", `follow "maybe": not true or false`},
	} {
		v, _ := url.ParseQuery(tc.query)
		if _, err := ParseEventsQuery(v); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.query, err, tc.want)
		}
	}
}

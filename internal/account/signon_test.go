package account

import "testing"

func TestSignOnName(t *testing.T) {
	for _, tc := range []struct{ preferred, email, want string }{
		{"anna", "x@y", "anna"},
		{"anna.berg@skola.se", "", "anna.berg"},
		{"", "Åsa.Öberg@skola.se", "Asa.Oberg"},
		{"Jürgen Müller", "", "Jurgen-Muller"},
		{"--.x", "", "x"},
		{"", "", "user"},
		{"中文", "", "user"},
		{"", "@skola.se", "user"},
		{"a/b\\c", "", "a-b-c"},
		{"xabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", "", "xabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde"},
	} {
		got := SignOnName(tc.preferred, tc.email)
		if got != tc.want || !namePattern.MatchString(got) {
			t.Errorf("SignOnName(%q, %q) = %q, want %q", tc.preferred, tc.email, got, tc.want)
		}
	}
	if n := numbered("abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd", "12"); len(n) > 64 || !namePattern.MatchString(n) {
		t.Errorf("numbered long name = %q", n)
	}
}

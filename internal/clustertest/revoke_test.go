package clustertest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/wire"
)

// testRevocation (issue 29): a token revoked through one API node is refused by the other
// at once, and so is every token of a user disabled through the other node; enabling
// the user does not bring the revoked token back.
func testRevocation(t *testing.T, c *skripCluster) {
	ctx := context.Background()
	u, err := c.admin.CreateUser(ctx, "rita", "user", "")
	if err != nil {
		t.Fatal(err)
	}
	// A second token of rita's, made through api2, to revoke.
	var issued wire.IssuedToken
	rita1, _ := client.New(c.api["api1"].base, u.Token)
	if err := rita1.Do(ctx, http.MethodPost, "/api/v1/users/"+u.ID+"/tokens", wire.NewToken{Name: "laptop"}, &issued); err != nil {
		t.Fatal(err)
	}
	on := func(node, token string) *client.Client {
		cl, err := client.New(c.api[node].base, token)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	status := func(cl *client.Client) int {
		var me wire.Me
		err := cl.Do(ctx, http.MethodGet, "/api/v1/me", nil, &me)
		var ae *client.Error
		switch {
		case err == nil:
			return http.StatusOK
		case errors.As(err, &ae):
			return ae.Status
		}
		t.Fatal(err)
		return 0
	}
	for _, node := range []string{"api1", "api2"} {
		if got := status(on(node, issued.Secret)); got != http.StatusOK {
			t.Fatalf("the new token on %s: %d, want 200", node, got)
		}
	}
	// Revoked through api1, refused by api2 in the same instant.
	if err := rita1.Do(ctx, http.MethodDelete, "/api/v1/tokens/"+issued.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := status(on("api2", issued.Secret)); got != http.StatusUnauthorized {
		t.Fatalf("the revoked token on api2: %d, want 401", got)
	}
	t.Logf("revoked through api1; api2 answered 401 %s later", time.Since(start).Round(time.Millisecond))
	if got := status(on("api2", u.Token)); got != http.StatusOK {
		t.Fatalf("rita's other token on api2 after the revocation: %d, want 200", got)
	}

	// Disabled through api2: the first token is refused by api1.
	admin2 := on("api2", adminToken)
	if err := admin2.Do(ctx, http.MethodPost, "/api/v1/users/"+u.ID+"/disable", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := status(on("api1", u.Token)); got != http.StatusUnauthorized {
		t.Fatalf("a disabled user's token on api1: %d, want 401", got)
	}
	if err := c.admin.Do(ctx, http.MethodPost, "/api/v1/users/"+u.ID+"/enable", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := status(on("api1", issued.Secret)); got != http.StatusUnauthorized {
		t.Fatalf("the revoked token after enabling the user: %d, want 401", got)
	}
}

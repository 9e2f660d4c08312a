package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

// A script that makes a namespace and a token that may publish there, as
// `trove namespace create` and `trove token create` do.
func Example() {
	ctx := context.Background()
	c, err := client.New("https://trove.example.com", os.Getenv("TROVE_TOKEN"),
		client.WithCAFile(os.Getenv("TROVE_CA_FILE")))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Description: "platform team"}); err != nil {
		log.Fatal(err)
	}
	tok, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Namespaces: []string{"acme"}, Scopes: []string{"publish"}, Description: "CI"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.Secret)
}

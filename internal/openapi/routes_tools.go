package openapi

import "github.com/skrip-dev/skrip/internal/wire"

// toolRoutes are tools, versions, settings, categories and favourites (docs/spec.md §5, §6).
func toolRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/api/v1/tools", Summary: "Create a tool with its first version (author).", Body: JSON(wire.NewTool{}),
			Answers: []Answer{Created(wire.CreatedTool{})}, Errors: []int{409, 413}},
		{Method: "GET", Path: "/api/v1/tools", Summary: "List the tools the caller sees.", Answers: []Answer{OK(wire.ToolList{})}},
		{Method: "GET", Path: "/api/v1/tools/{tool}", Summary: "Show a tool (by id or slug) with its published version's schemas.",
			Answers: []Answer{OK(wire.ToolDetail{})}},
		{Method: "PATCH", Path: "/api/v1/tools/{tool}", Summary: "Change a tool's title, texts or categories.", Body: JSON(wire.ToolInfo{}),
			Answers: []Answer{OK(wire.Tool{})}},
		{Method: "GET", Path: "/api/v1/tools/{tool}/settings", Summary: "The caller's settings for a tool.", Answers: []Answer{OK(wire.Settings{})}},
		{Method: "PUT", Path: "/api/v1/tools/{tool}/settings", Summary: "Save the caller's settings for a tool.", Body: JSON(wire.SettingsUpdate{}),
			Answers: []Answer{OK(wire.Settings{})}},
		{Method: "POST", Path: "/api/v1/tools/{tool}/versions", Summary: "Add a version to a tool.", Body: JSON(wire.NewVersion{}),
			Answers: []Answer{Created(wire.Version{})}, Errors: []int{413}},
		{Method: "GET", Path: "/api/v1/tool-versions/{version}", Summary: "Show a tool version.", Answers: []Answer{OK(wire.Version{})}},
		{Method: "POST", Path: "/api/v1/tool-versions/{version}/publish", Summary: "Publish a version.", Answers: []Answer{OK(wire.Tool{})}, Errors: []int{412}},
		{Method: "POST", Path: "/api/v1/tools/{tool}/unpublish", Summary: "Withdraw a tool's published version.", Answers: []Answer{OK(wire.Tool{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/categories", Summary: "The categories, with how many visible tools carry each.", Answers: []Answer{OK(wire.CategoryList{})}},
		{Method: "POST", Path: "/api/v1/categories", Summary: "Create a category (admin).", Body: JSON(wire.NewCategory{}),
			Answers: []Answer{Created(wire.Category{})}, Errors: []int{409}},
		{Method: "PATCH", Path: "/api/v1/categories/{category}", Summary: "Rename or approve a category (admin).", Body: JSON(wire.CategoryChange{}),
			Answers: []Answer{OK(wire.Category{})}},
		{Method: "DELETE", Path: "/api/v1/categories/{category}", Summary: "Delete a category (admin).", Answers: []Answer{NoContent()}},
		{Method: "PUT", Path: "/api/v1/tools/{tool}/favourite", Summary: "Mark a tool a favourite of the caller's.", Answers: []Answer{NoContent()}},
		{Method: "DELETE", Path: "/api/v1/tools/{tool}/favourite", Summary: "Unmark a favourite.", Answers: []Answer{NoContent()}},
	}
}

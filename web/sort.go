package web

import "strings"

// SortColumn is a table's column header that sorts the table on the
// server: a link to the same page in the column's order (the opposite
// direction when the table is sorted by it already) and, on the column the
// table is sorted by, its direction for aria-sort.
type SortColumn struct {
	Label string
	URL   string
	// Aria is "ascending" or "descending" on the sorted column, else "".
	Aria string
}

// Arrow is the visible sign of the sorted column's direction.
func (c SortColumn) Arrow() string {
	switch c.Aria {
	case "ascending":
		return "▲"
	case "descending":
		return "▼"
	}
	return ""
}

// Title says what following the header's link does.
func (c SortColumn) Title() string {
	if c.Aria == "descending" {
		return "Sort by " + strings.ToLower(c.Label) + ", ascending"
	}
	if c.Aria == "ascending" {
		return "Sort by " + strings.ToLower(c.Label) + ", descending"
	}
	return "Sort by " + strings.ToLower(c.Label)
}

// sortColumn is the header of the column sorted by key in a table now in
// order current ("key" ascending, "-key" descending); first is the order a
// click on an unsorted column gives ("-key" for the columns people read
// largest or newest first). link makes the page's URL for an order.
func sortColumn(label, key, first, current string, link func(order string) string) SortColumn {
	c := SortColumn{Label: label}
	switch current {
	case key:
		c.Aria, c.URL = "ascending", link("-"+key)
	case "-" + key:
		c.Aria, c.URL = "descending", link(key)
	default:
		c.URL = link(first)
	}
	return c
}

/*
 * lp_s3_xml.c - the XML of S3 responses (and of the CompleteMultipartUpload
 * request): a strict, bounded reader into typed results, and the writer of
 * the request body.
 *
 * The reader checks the whole body to be UTF-8 of XML characters first, then
 * builds a tree of elements in one pass: names stay in the body, decoded text
 * goes to one arena that becomes the document's text.  Decoded text is never
 * longer than its source, so the arena is sized from the body up front and
 * never moves.  Typed results are then read from the tree.
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "io/lp_s3_xml.h"

#define MAX_NAME_LEN 256
/* the longest reference decoded: "&#x" or "&#", up to 8 digits with leading zeros, ";" */
#define MAX_REFERENCE_LEN 12
/* how much of a name a message quotes */
#define NAME_IN_MESSAGE 64
/* find_bad_char's answer for a byte sequence that is not UTF-8 */
#define NOT_UTF8 UINT32_MAX

typedef struct XmlNode
{
	uint32_t	start;			/* offset of its '<' in the body */
	uint32_t	name_off;		/* qualified name, in the body */
	uint32_t	name_len;
	uint32_t	local_off;		/* local name (after any prefix), in the body */
	uint32_t	text_off;		/* text in the arena; 0 is the empty string */
	uint32_t	text_len;
	int32_t		first_child;	/* node index, -1 if none */
	int32_t		last_child;
	int32_t		next_sibling;
} XmlNode;

typedef struct XmlParser
{
	const char *body;
	size_t		len;
	size_t		pos;
	XmlNode    *nodes;
	uint32_t	num_nodes;
	uint32_t	max_nodes;
	char	   *arena;
	size_t		arena_len;
	size_t		arena_cap;
	int32_t		open[LP_S3_XML_MAX_DEPTH];	/* open elements, outermost first */
	int			depth;
	int32_t		root;
	LpError    *err;
} XmlParser;

/* ---- characters --------------------------------------------------------- */

/* XML 1.0's Char production, for a code point already known to be valid */
static bool
is_xml_char(uint32_t c)
{
	if (c < 0x20)
		return c == 0x9 || c == 0xA || c == 0xD;
	return c != 0xFFFE && c != 0xFFFF;
}

/*
 * Decode one UTF-8 sequence at s (n bytes available): its code point and
 * length, or 0 for a malformed, overlong, surrogate or out-of-range one.
 */
static size_t
utf8_decode(const unsigned char *s, size_t n, uint32_t *code_point)
{
	uint32_t	c = s[0];
	size_t		length;
	uint32_t	minimum;

	if (c < 0x80)
	{
		*code_point = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
	{
		length = 2;
		c &= 0x1F;
		minimum = 0x80;
	}
	else if (c >= 0xE0 && c <= 0xEF)
	{
		length = 3;
		c &= 0x0F;
		minimum = 0x800;
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		length = 4;
		c &= 0x07;
		minimum = 0x10000;
	}
	else
		return 0;
	if (n < length)
		return 0;
	for (size_t i = 1; i < length; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < minimum || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*code_point = c;
	return length;
}

/*
 * Offset of the first byte of text that is not UTF-8 or not an XML
 * character, or len if all are; *code_point is NOT_UTF8 for a bad sequence,
 * else the refused character.
 */
static size_t
find_bad_char(const char *text, size_t len, uint32_t *code_point)
{
	const unsigned char *s = (const unsigned char *) text;
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	c;
		size_t		n;

		if (s[i] >= 0x20 && s[i] < 0x80)
		{
			i++;
			continue;
		}
		n = utf8_decode(s + i, len - i, &c);
		if (n == 0)
		{
			*code_point = NOT_UTF8;
			return i;
		}
		if (!is_xml_char(c))
		{
			*code_point = c;
			return i;
		}
		i += n;
	}
	return len;
}

static size_t
utf8_encode(uint32_t c, char *out)
{
	if (c < 0x80)
	{
		out[0] = (char) c;
		return 1;
	}
	if (c < 0x800)
	{
		out[0] = (char) (0xC0 | (c >> 6));
		out[1] = (char) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		out[0] = (char) (0xE0 | (c >> 12));
		out[1] = (char) (0x80 | ((c >> 6) & 0x3F));
		out[2] = (char) (0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (c >> 18));
	out[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	out[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool
all_space(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!is_space(s[i]))
			return false;
	return true;
}

static bool
is_name_start(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80;
}

static bool
is_name_char(unsigned char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

/* ---- the parser ---------------------------------------------------------- */

static bool
syntax_error(XmlParser *p, const char *what)
{
	return lp_fail(p->err, LP_ERR_CORRUPT, "malformed S3 XML document: %s at byte %zu",
				   what, p->pos);
}

static bool
at(const XmlParser *p, const char *literal)
{
	size_t		n = strlen(literal);

	return p->len - p->pos >= n && memcmp(p->body + p->pos, literal, n) == 0;
}

/* Offset of the first literal at or after pos, or len if there is none. */
static size_t
find(const XmlParser *p, const char *literal)
{
	size_t		n = strlen(literal);

	for (size_t i = p->pos; p->len - i >= n; i++)
		if (memcmp(p->body + i, literal, n) == 0)
			return i;
	return p->len;
}

static void
skip_space(XmlParser *p)
{
	while (p->pos < p->len && is_space(p->body[p->pos]))
		p->pos++;
}

static bool
arena_append(XmlParser *p, const char *bytes, size_t n)
{
	/* cannot happen: decoded text never outgrows its source */
	if (n > p->arena_cap - p->arena_len)
		return lp_fail(p->err, LP_ERR_INTERNAL, "S3 XML text arena of %zu bytes overflowed",
					   p->arena_cap);
	memcpy(p->arena + p->arena_len, bytes, n);
	p->arena_len += n;
	return true;
}

/* A name at pos: its length, or 0 (after failing) if there is none. */
static size_t
parse_name(XmlParser *p, const char *what)
{
	size_t		start = p->pos;

	if (p->pos >= p->len || !is_name_start((unsigned char) p->body[p->pos]))
	{
		syntax_error(p, what);
		return 0;
	}
	while (p->pos < p->len && is_name_char((unsigned char) p->body[p->pos]))
		p->pos++;
	if (p->pos - start > MAX_NAME_LEN)
	{
		p->pos = start;
		syntax_error(p, "name longer than 256 bytes");
		return 0;
	}
	return p->pos - start;
}

/* The reference at pos ('&'): the character it stands for, pos after it. */
static bool
parse_reference(XmlParser *p, uint32_t *code_point)
{
	static const struct
	{
		const char *name;
		char		c;
	}			named[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
	const char *start = p->body + p->pos + 1;
	size_t		available = p->len - p->pos - 1;
	const char *semicolon = memchr(start, ';', available < MAX_REFERENCE_LEN ? available : MAX_REFERENCE_LEN);
	size_t		n;

	if (semicolon == NULL)
		return syntax_error(p, "unterminated or unknown entity reference");
	n = (size_t) (semicolon - start);
	if (n >= 1 && start[0] == '#')
	{
		bool		hex = n >= 2 && start[1] == 'x';
		uint32_t	value = 0;
		size_t		i = hex ? 2 : 1;

		if (i == n)
			return syntax_error(p, "character reference without digits");
		for (; i < n; i++)
		{
			char		c = start[i];
			uint32_t	digit;

			if (c >= '0' && c <= '9')
				digit = (uint32_t) (c - '0');
			else if (hex && c >= 'a' && c <= 'f')
				digit = (uint32_t) (c - 'a' + 10);
			else if (hex && c >= 'A' && c <= 'F')
				digit = (uint32_t) (c - 'A' + 10);
			else
				return syntax_error(p, "invalid digit in character reference");
			value = value * (hex ? 16 : 10) + digit;
			if (value > 0x10FFFF)
				return syntax_error(p, "character reference beyond U+10FFFF");
		}
		if ((value >= 0xD800 && value <= 0xDFFF) || !is_xml_char(value))
			return syntax_error(p, "character reference to a character XML does not allow");
		*code_point = value;
		p->pos += n + 2;
		return true;
	}
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
	{
		if (strlen(named[i].name) == n && memcmp(start, named[i].name, n) == 0)
		{
			*code_point = (uint32_t) named[i].c;
			p->pos += n + 2;
			return true;
		}
	}
	return syntax_error(p, "unknown entity reference (only &amp; &lt; &gt; &quot; &apos; and &#N; are defined)");
}

static XmlNode *
top(XmlParser *p)
{
	return p->depth > 0 ? &p->nodes[p->open[p->depth - 1]] : NULL;
}

/*
 * Text from start to the end of the arena was just decoded: give it to the
 * open element, or drop it if it is whitespace between elements.  An element
 * holds text or elements, never both.
 */
static bool
place_text(XmlParser *p, size_t start)
{
	XmlNode    *node = top(p);
	size_t		n = p->arena_len - start;

	if (n == 0)
		return true;
	if (node == NULL || node->first_child >= 0)
	{
		if (!all_space(p->arena + start, n))
			return syntax_error(p, node == NULL ? "text outside the root element"
								: "text beside child elements");
		p->arena_len = start;
		return true;
	}
	if (node->text_len == 0)
		node->text_off = (uint32_t) start;
	node->text_len += (uint32_t) n;
	return true;
}

/* Characters and references up to the next '<'. */
static bool
parse_text(XmlParser *p)
{
	size_t		start = p->arena_len;

	while (p->pos < p->len && p->body[p->pos] != '<')
	{
		const char *run = p->body + p->pos;
		size_t		run_len = 0;

		while (p->pos + run_len < p->len && run[run_len] != '<' && run[run_len] != '&' &&
			   run[run_len] != '\r')
			run_len++;
		if (!arena_append(p, run, run_len))
			return false;
		p->pos += run_len;
		if (p->pos >= p->len || p->body[p->pos] == '<')
			break;
		if (p->body[p->pos] == '\r')
		{
			/* line ends are normalized to "\n", as XML requires */
			p->pos++;
			if (p->pos < p->len && p->body[p->pos] == '\n')
				p->pos++;
			if (!arena_append(p, "\n", 1))
				return false;
		}
		else
		{
			uint32_t	c;
			char		utf8[4];

			if (!parse_reference(p, &c))
				return false;
			if (!arena_append(p, utf8, utf8_encode(c, utf8)))
				return false;
		}
	}
	return place_text(p, start);
}

static bool
parse_cdata(XmlParser *p)
{
	size_t		start = p->arena_len;
	size_t		end;

	if (p->depth == 0)
		return syntax_error(p, "CDATA section outside the root element");
	p->pos += strlen("<![CDATA[");
	end = find(p, "]]>");
	if (end == p->len)
		return syntax_error(p, "unterminated CDATA section");
	while (p->pos < end)
	{
		char		c = p->body[p->pos++];

		if (c == '\r')
		{
			if (p->pos < end && p->body[p->pos] == '\n')
				p->pos++;
			c = '\n';
		}
		if (!arena_append(p, &c, 1))
			return false;
	}
	p->pos += 3;
	return place_text(p, start);
}

static bool
parse_comment(XmlParser *p)
{
	size_t		dashes;

	p->pos += strlen("<!--");
	dashes = find(p, "--");
	if (dashes == p->len)
		return syntax_error(p, "unterminated comment");
	p->pos = dashes;
	if (!at(p, "-->"))
		return syntax_error(p, "\"--\" inside a comment");
	p->pos += 3;
	return true;
}

/* A processing instruction, the XML declaration among them (at_start). */
static bool
parse_processing_instruction(XmlParser *p, bool at_start)
{
	size_t		name_len;
	const char *name;
	size_t		end;

	p->pos += 2;
	name = p->body + p->pos;
	name_len = parse_name(p, "expected a processing instruction target");
	if (name_len == 0)
		return false;
	if (name_len == 3 && (name[0] | 0x20) == 'x' && (name[1] | 0x20) == 'm' && (name[2] | 0x20) == 'l' &&
		!at_start)
		return syntax_error(p, "XML declaration not at the start of the document");
	if (p->pos < p->len && !is_space(p->body[p->pos]) && !at(p, "?>"))
		return syntax_error(p, "expected whitespace after the processing instruction target");
	end = find(p, "?>");
	if (end == p->len)
		return syntax_error(p, "unterminated processing instruction");
	p->pos = end + 2;
	return true;
}

/* Attributes are read to check them and then ignored (xmlns among them). */
static bool
parse_attribute(XmlParser *p)
{
	char		quote;

	if (parse_name(p, "expected an attribute name") == 0)
		return false;
	skip_space(p);
	if (p->pos >= p->len || p->body[p->pos] != '=')
		return syntax_error(p, "expected \"=\" after an attribute name");
	p->pos++;
	skip_space(p);
	if (p->pos >= p->len || (p->body[p->pos] != '"' && p->body[p->pos] != '\''))
		return syntax_error(p, "expected a quoted attribute value");
	quote = p->body[p->pos++];
	while (p->pos < p->len && p->body[p->pos] != quote)
	{
		uint32_t	c;

		if (p->body[p->pos] == '<')
			return syntax_error(p, "\"<\" in an attribute value");
		if (p->body[p->pos] == '&')
		{
			if (!parse_reference(p, &c))
				return false;
		}
		else
			p->pos++;
	}
	if (p->pos >= p->len)
		return syntax_error(p, "unterminated attribute value");
	p->pos++;
	return true;
}

static bool
parse_start_tag(XmlParser *p)
{
	XmlNode    *parent = top(p);
	XmlNode    *node;
	int32_t		index;
	size_t		name_len;
	uint32_t	name_end;

	if (p->depth == 0 && p->root >= 0)
		return syntax_error(p, "a second root element");
	if (p->depth == LP_S3_XML_MAX_DEPTH)
		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "malformed S3 XML document: elements nested deeper than %d levels at byte %zu",
					   LP_S3_XML_MAX_DEPTH, p->pos);
	if (p->num_nodes == LP_S3_XML_MAX_ELEMENTS)
		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "malformed S3 XML document: more than %d elements at byte %zu",
					   LP_S3_XML_MAX_ELEMENTS, p->pos);
	/* cannot happen: every element has its own '<' */
	if (p->num_nodes == p->max_nodes)
		return lp_fail(p->err, LP_ERR_INTERNAL, "S3 XML element table of %u entries overflowed",
					   p->max_nodes);
	index = (int32_t) p->num_nodes++;
	node = &p->nodes[index];
	memset(node, 0, sizeof(*node));
	node->start = (uint32_t) p->pos;
	node->first_child = node->last_child = node->next_sibling = -1;
	p->pos++;
	node->name_off = (uint32_t) p->pos;
	name_len = parse_name(p, "expected an element name after \"<\"");
	if (name_len == 0)
		return false;
	node->name_len = (uint32_t) name_len;
	name_end = node->name_off + node->name_len;
	node->local_off = name_end;
	while (node->local_off > node->name_off && p->body[node->local_off - 1] != ':')
		node->local_off--;
	if (node->local_off == name_end)
		return syntax_error(p, "element name with an empty local part");

	if (parent != NULL && parent->first_child < 0 && parent->text_len > 0)
	{
		if (!all_space(p->arena + parent->text_off, parent->text_len))
			return syntax_error(p, "child element beside text");
		/* whitespace before the first child: the last text in the arena */
		p->arena_len = parent->text_off;
		parent->text_off = 0;
		parent->text_len = 0;
	}

	if (parent == NULL)
		p->root = index;
	else
	{
		if (parent->last_child >= 0)
			p->nodes[parent->last_child].next_sibling = index;
		else
			parent->first_child = index;
		parent->last_child = index;
	}

	for (;;)
	{
		bool		spaced = p->pos < p->len && is_space(p->body[p->pos]);

		skip_space(p);
		if (p->pos >= p->len)
			return syntax_error(p, "unterminated start tag");
		if (p->body[p->pos] == '>')
		{
			p->pos++;
			p->open[p->depth++] = index;
			return true;
		}
		if (at(p, "/>"))
		{
			p->pos += 2;
			return true;
		}
		if (!spaced)
			return syntax_error(p, "expected whitespace, \">\" or \"/>\" in a start tag");
		if (!parse_attribute(p))
			return false;
	}
}

static bool
parse_end_tag(XmlParser *p)
{
	XmlNode    *node = top(p);
	size_t		name_off;
	size_t		name_len;

	if (node == NULL)
		return syntax_error(p, "end tag without a start tag");
	p->pos += 2;
	name_off = p->pos;
	name_len = parse_name(p, "expected an element name after \"</\"");
	if (name_len == 0)
		return false;
	if (name_len != node->name_len || memcmp(p->body + name_off, p->body + node->name_off, name_len) != 0)
		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "malformed S3 XML document: end tag </%.*s> closes <%.*s> at byte %zu",
					   (int) (name_len < NAME_IN_MESSAGE ? name_len : NAME_IN_MESSAGE), p->body + name_off,
					   (int) (node->name_len < NAME_IN_MESSAGE ? node->name_len : NAME_IN_MESSAGE),
					   p->body + node->name_off, name_off - 2);
	skip_space(p);
	if (p->pos >= p->len || p->body[p->pos] != '>')
		return syntax_error(p, "expected \">\" to end an end tag");
	p->pos++;
	/* the element's text, if any, is the last text in the arena */
	if (node->text_len > 0 && !arena_append(p, "", 1))
		return false;
	p->depth--;
	return true;
}

static bool
parse_markup(XmlParser *p)
{
	if (at(p, "<!--"))
		return parse_comment(p);
	if (at(p, "<![CDATA["))
		return parse_cdata(p);
	if (at(p, "<!DOCTYPE"))
		return syntax_error(p, "document type declarations are not accepted");
	if (at(p, "<!"))
		return syntax_error(p, "unknown markup declaration");
	if (at(p, "<?"))
		return parse_processing_instruction(p, false);
	if (at(p, "</"))
		return parse_end_tag(p);
	return parse_start_tag(p);
}

static bool
parse_tree(XmlParser *p)
{
	size_t		bad;
	uint32_t	code_point;
	size_t		markup = 0;

	if (p->len == 0)
		return lp_fail(p->err, LP_ERR_CORRUPT, "malformed S3 XML document: the body is empty");
	if (p->len > LP_S3_XML_MAX_BODY)
		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "S3 XML document of %zu bytes exceeds the limit of %zu bytes",
					   p->len, LP_S3_XML_MAX_BODY);
	bad = find_bad_char(p->body, p->len, &code_point);
	if (bad < p->len)
	{
		if (code_point == NOT_UTF8)
			return lp_fail(p->err, LP_ERR_CORRUPT,
						   "malformed S3 XML document: invalid UTF-8 at byte %zu", bad);
		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "malformed S3 XML document: character U+%04X at byte %zu is not allowed in XML",
					   (unsigned) code_point, bad);
	}

	for (size_t i = 0; i < p->len; i++)
		markup += p->body[i] == '<';
	p->max_nodes = (uint32_t) (markup < LP_S3_XML_MAX_ELEMENTS ? markup : LP_S3_XML_MAX_ELEMENTS);
	p->nodes = lp_alloc_array(p->max_nodes > 0 ? p->max_nodes : 1, sizeof(XmlNode));
	/* decoded text is never longer than its source; one NUL per element */
	p->arena_cap = p->len + p->max_nodes + 1;
	p->arena = lp_alloc(p->arena_cap);
	if (p->nodes == NULL || p->arena == NULL)
		return lp_fail(p->err, LP_ERR_NO_MEMORY, "out of memory reading an S3 XML document of %zu bytes",
					   p->len);
	p->arena[0] = '\0';
	p->arena_len = 1;
	p->root = -1;

	if (at(p, "\xEF\xBB\xBF"))
		p->pos += 3;
	if (at(p, "<?xml") && p->pos + 5 < p->len && (is_space(p->body[p->pos + 5]) || p->body[p->pos + 5] == '?'))
	{
		if (!parse_processing_instruction(p, true))
			return false;
	}
	while (p->pos < p->len)
	{
		if (!(p->body[p->pos] == '<' ? parse_markup(p) : parse_text(p)))
			return false;
	}
	if (p->depth > 0)
	{
		XmlNode    *node = top(p);

		return lp_fail(p->err, LP_ERR_CORRUPT,
					   "malformed S3 XML document: element <%.*s> at byte %u is not closed",
					   (int) (node->name_len < NAME_IN_MESSAGE ? node->name_len : NAME_IN_MESSAGE),
					   p->body + node->name_off, node->start);
	}
	if (p->root < 0)
		return lp_fail(p->err, LP_ERR_CORRUPT, "malformed S3 XML document: no root element");
	return true;
}

/* ---- typed results ------------------------------------------------------- */

typedef struct Reader
{
	XmlParser  *p;
	const char *document;		/* root name, for messages */
} Reader;

static size_t
local_name_len(const XmlNode *node)
{
	return node->name_off + node->name_len - node->local_off;
}

/* the length of a local name as messages quote it */
static int
quoted_len(const XmlNode *node)
{
	return (int) (local_name_len(node) < NAME_IN_MESSAGE ? local_name_len(node) : NAME_IN_MESSAGE);
}

static bool
is_named(const Reader *r, const XmlNode *node, const char *name)
{
	size_t		n = strlen(name);

	return local_name_len(node) == n && memcmp(r->p->body + node->local_off, name, n) == 0;
}

static const char *
text_of(const Reader *r, const XmlNode *node)
{
	return r->p->arena + node->text_off;
}

static bool
field_error(const Reader *r, const XmlNode *parent, const char *field, const char *what)
{
	return lp_fail(r->p->err, LP_ERR_CORRUPT, "malformed S3 %s document: <%s> in <%.*s> at byte %u %s",
				   r->document, field, quoted_len(parent), r->p->body + parent->local_off, parent->start,
				   what);
}

static size_t
count_children(const Reader *r, const XmlNode *parent, const char *name)
{
	size_t		count = 0;

	for (int32_t i = parent->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
		count += is_named(r, &r->p->nodes[i], name);
	return count;
}

/*
 * The text of parent's one child element named field: NULL in *text if there
 * is none (an error if required), a failure if there are several or it holds
 * elements.
 */
static bool
field_text(const Reader *r, const XmlNode *parent, const char *field, bool required,
		   const char **text)
{
	const XmlNode *found = NULL;

	for (int32_t i = parent->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
	{
		const XmlNode *child = &r->p->nodes[i];

		if (!is_named(r, child, field))
			continue;
		if (found != NULL)
			return field_error(r, parent, field, "appears more than once");
		if (child->first_child >= 0)
			return field_error(r, parent, field, "holds elements instead of text");
		found = child;
	}
	if (found == NULL && required)
		return field_error(r, parent, field, "is missing");
	*text = found == NULL ? NULL : text_of(r, found);
	return true;
}

/* A required field that must not be empty either. */
static bool
field_nonempty(const Reader *r, const XmlNode *parent, const char *field, const char **text)
{
	if (!field_text(r, parent, field, true, text))
		return false;
	if ((*text)[0] == '\0')
		return field_error(r, parent, field, "is empty");
	return true;
}

/* text without the XML whitespace around it, as [*start, *start + *len) */
static void
trim(const char *text, const char **start, size_t *len)
{
	size_t		n = strlen(text);

	while (n > 0 && is_space(*text))
	{
		text++;
		n--;
	}
	while (n > 0 && is_space(text[n - 1]))
		n--;
	*start = text;
	*len = n;
}

static bool
field_uint64(const Reader *r, const XmlNode *parent, const char *field, bool required,
			 bool *present, uint64_t *value)
{
	const char *text;
	const char *digits;
	size_t		n;
	uint64_t	result = 0;

	if (!field_text(r, parent, field, required, &text))
		return false;
	*present = text != NULL;
	if (text == NULL)
		return true;
	trim(text, &digits, &n);
	if (n == 0)
		return field_error(r, parent, field, "is not a number");
	for (size_t i = 0; i < n; i++)
	{
		if (digits[i] < '0' || digits[i] > '9')
			return field_error(r, parent, field, "is not a number");
		if (!lp_mul_u64(result, 10, &result) ||
			!lp_add_u64(result, (uint64_t) (digits[i] - '0'), &result))
			return field_error(r, parent, field, "is a number beyond 2^64-1");
	}
	*value = result;
	return true;
}

static bool
field_bool(const Reader *r, const XmlNode *parent, const char *field, bool *value)
{
	const char *text;
	const char *word;
	size_t		n;

	if (!field_text(r, parent, field, true, &text))
		return false;
	trim(text, &word, &n);
	if (n == 4 && memcmp(word, "true", 4) == 0)
		*value = true;
	else if (n == 5 && memcmp(word, "false", 5) == 0)
		*value = false;
	else
		return field_error(r, parent, field, "is neither \"true\" nor \"false\"");
	return true;
}

/* n digits at s as a number, false if any is not a digit */
static bool
parse_digits(const char *s, size_t n, int *value)
{
	*value = 0;
	for (size_t i = 0; i < n; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return false;
		*value = *value * 10 + (s[i] - '0');
	}
	return true;
}

/* days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm) */
static int64_t
days_from_civil(int year, int month, int day)
{
	int64_t		y = year - (month <= 2);
	int64_t		era = (y >= 0 ? y : y - 399) / 400;
	int64_t		year_of_era = y - era * 400;
	int64_t		day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
	int64_t		day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;

	return era * 146097 + day_of_era - 719468;
}

/*
 * An ISO-8601 timestamp as S3 writes them, "2024-05-01T12:34:56.789Z": date,
 * "T", time, optional fraction, then "Z" or an offset "+hh:mm".
 */
static bool
parse_timestamp(const char *text, size_t n, LpS3Timestamp *result)
{
	static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			year,
				month,
				day,
				hour,
				minute,
				second;
	int			microseconds = 0;
	int64_t		offset_seconds = 0;
	size_t		i = 19;
	int			days_in_month;

	if (n < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
		text[16] != ':' ||
		!parse_digits(text, 4, &year) || !parse_digits(text + 5, 2, &month) ||
		!parse_digits(text + 8, 2, &day) || !parse_digits(text + 11, 2, &hour) ||
		!parse_digits(text + 14, 2, &minute) || !parse_digits(text + 17, 2, &second))
		return false;
	if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59)
		return false;
	days_in_month = month_days[month - 1] +
		(month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0));
	if (day < 1 || day > days_in_month)
		return false;
	if (text[i] == '.')
	{
		size_t		digits = 0;

		i++;
		while (i < n && text[i] >= '0' && text[i] <= '9')
		{
			if (digits < 6)
				microseconds = microseconds * 10 + (text[i] - '0');
			digits++;
			i++;
		}
		if (digits == 0)
			return false;
		for (; digits < 6; digits++)
			microseconds *= 10;
	}
	if (i == n - 1 && text[i] == 'Z')
		i++;
	else if (i + 6 == n && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':')
	{
		int			offset_hours,
					offset_minutes;

		if (!parse_digits(text + i + 1, 2, &offset_hours) ||
			!parse_digits(text + i + 4, 2, &offset_minutes) ||
			offset_hours > 23 || offset_minutes > 59)
			return false;
		offset_seconds = (int64_t) (offset_hours * 3600 + offset_minutes * 60) * (text[i] == '+' ? 1 : -1);
		i += 6;
	}
	else
		return false;
	result->seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second -
		offset_seconds;
	result->microseconds = microseconds;
	return true;
}

static bool
field_timestamp(const Reader *r, const XmlNode *parent, const char *field, bool required,
				bool *present, LpS3Timestamp *value)
{
	const char *text;
	const char *start;
	size_t		n;

	if (!field_text(r, parent, field, required, &text))
		return false;
	*present = text != NULL;
	if (text == NULL)
		return true;
	trim(text, &start, &n);
	if (!parse_timestamp(start, n, value))
		return field_error(r, parent, field, "is not an ISO-8601 timestamp");
	return true;
}

/* An array of count elements of size bytes, NULL for none. */
static bool
alloc_entries(const Reader *r, size_t count, size_t size, void **entries)
{
	*entries = NULL;
	if (count == 0)
		return true;
	*entries = lp_alloc_array(count, size);
	if (*entries == NULL)
		return lp_fail(r->p->err, LP_ERR_NO_MEMORY, "out of memory reading an S3 %s document",
					   r->document);
	return true;
}

static bool
read_error(const Reader *r, const XmlNode *root, LpS3ErrorBody *out)
{
	return field_nonempty(r, root, "Code", &out->code) &&
		field_text(r, root, "Message", false, &out->message) &&
		field_text(r, root, "RequestId", false, &out->request_id) &&
		field_text(r, root, "HostId", false, &out->host_id) &&
		field_text(r, root, "Resource", false, &out->resource) &&
		field_text(r, root, "Key", false, &out->key) &&
		field_text(r, root, "BucketName", false, &out->bucket_name);
}

/*
 * Keys listed with encoding-type=url arrive URL-encoded: reading them as
 * keys would name other objects, so such a listing is refused.
 */
static bool
refuse_encoded_keys(const Reader *r, const XmlNode *root)
{
	const char *encoding;

	if (!field_text(r, root, "EncodingType", false, &encoding))
		return false;
	if (encoding != NULL && encoding[0] != '\0')
		return lp_fail(r->p->err, LP_ERR_UNSUPPORTED,
					   "S3 %s document with keys in encoding \"%.64s\" is not supported",
					   r->document, encoding);
	return true;
}

static bool
read_list_objects(const Reader *r, const XmlNode *root, LpS3ListObjects *out)
{
	size_t		object = 0;
	size_t		prefix = 0;

	if (!refuse_encoded_keys(r, root) ||
		!field_bool(r, root, "IsTruncated", &out->is_truncated) ||
		!field_text(r, root, "NextContinuationToken", false, &out->next_continuation_token) ||
		!field_uint64(r, root, "KeyCount", false, &out->has_key_count, &out->key_count))
		return false;
	/* a truncated listing without a token to go on could only loop or stop short */
	if (out->is_truncated &&
		(out->next_continuation_token == NULL || out->next_continuation_token[0] == '\0'))
		return field_error(r, root, "NextContinuationToken", "is missing or empty in a truncated listing");

	out->num_objects = count_children(r, root, "Contents");
	out->num_common_prefixes = count_children(r, root, "CommonPrefixes");
	if (!alloc_entries(r, out->num_objects, sizeof(LpS3Object), (void **) &out->objects) ||
		!alloc_entries(r, out->num_common_prefixes, sizeof(char *), (void **) &out->common_prefixes))
		return false;
	for (int32_t i = root->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
	{
		const XmlNode *child = &r->p->nodes[i];

		if (is_named(r, child, "Contents"))
		{
			LpS3Object *entry = &out->objects[object++];
			bool		present;

			if (!field_nonempty(r, child, "Key", &entry->key) ||
				!field_uint64(r, child, "Size", true, &present, &entry->size) ||
				!field_timestamp(r, child, "LastModified", true, &present, &entry->last_modified) ||
				!field_text(r, child, "ETag", false, &entry->etag))
				return false;
		}
		else if (is_named(r, child, "CommonPrefixes"))
		{
			if (!field_nonempty(r, child, "Prefix", &out->common_prefixes[prefix++]))
				return false;
		}
	}
	return true;
}

static bool
read_list_uploads(const Reader *r, const XmlNode *root, LpS3ListUploads *out)
{
	size_t		upload = 0;

	if (!refuse_encoded_keys(r, root) ||
		!field_bool(r, root, "IsTruncated", &out->is_truncated) ||
		!field_text(r, root, "NextKeyMarker", false, &out->next_key_marker) ||
		!field_text(r, root, "NextUploadIdMarker", false, &out->next_upload_id_marker))
		return false;
	if (out->is_truncated && (out->next_key_marker == NULL || out->next_key_marker[0] == '\0'))
		return field_error(r, root, "NextKeyMarker", "is missing or empty in a truncated listing");

	out->num_uploads = count_children(r, root, "Upload");
	if (!alloc_entries(r, out->num_uploads, sizeof(LpS3Upload), (void **) &out->uploads))
		return false;
	for (int32_t i = root->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
	{
		const XmlNode *child = &r->p->nodes[i];
		LpS3Upload *entry;
		bool		present;

		if (!is_named(r, child, "Upload"))
			continue;
		entry = &out->uploads[upload++];
		if (!field_nonempty(r, child, "Key", &entry->key) ||
			!field_nonempty(r, child, "UploadId", &entry->upload_id) ||
			!field_timestamp(r, child, "Initiated", true, &present, &entry->initiated))
			return false;
	}
	return true;
}

/*
 * The PartNumber of a Part element: 1..LP_S3_MAX_PARTS and above previous
 * (0 for the first part), as both the listing and the completion of parts
 * hold them.
 */
static bool
field_part_number(const Reader *r, const XmlNode *part, uint32_t previous, uint32_t *number)
{
	uint64_t	value;
	bool		present;

	if (!field_uint64(r, part, "PartNumber", true, &present, &value))
		return false;
	if (value < 1 || value > LP_S3_MAX_PARTS)
		return field_error(r, part, "PartNumber", "is not between 1 and 10000");
	if (value <= previous)
		return field_error(r, part, "PartNumber", "is not above the previous part's");
	*number = (uint32_t) value;
	return true;
}

static bool
read_list_parts(const Reader *r, const XmlNode *root, LpS3ListParts *out)
{
	size_t		part = 0;
	bool		present;
	uint64_t	marker = 0;

	if (!field_bool(r, root, "IsTruncated", &out->is_truncated) ||
		!field_uint64(r, root, "NextPartNumberMarker", false, &present, &marker))
		return false;
	if (out->is_truncated && (!present || marker < 1 || marker > LP_S3_MAX_PARTS))
		return field_error(r, root, "NextPartNumberMarker",
						   "is missing or not between 1 and 10000 in a truncated listing");
	out->next_part_number_marker = (uint32_t) (out->is_truncated ? marker : 0);

	out->num_parts = count_children(r, root, "Part");
	if (out->num_parts > LP_S3_MAX_PARTS)
		return field_error(r, root, "Part", "appears more than 10000 times");
	if (!alloc_entries(r, out->num_parts, sizeof(LpS3ListedPart), (void **) &out->parts))
		return false;
	for (int32_t i = root->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
	{
		const XmlNode *child = &r->p->nodes[i];
		LpS3ListedPart *entry;

		if (!is_named(r, child, "Part"))
			continue;
		entry = &out->parts[part];
		if (!field_part_number(r, child, part > 0 ? out->parts[part - 1].part_number : 0,
							   &entry->part_number) ||
			!field_uint64(r, child, "Size", true, &present, &entry->size))
			return false;
		part++;
	}
	return true;
}

static bool
read_complete_request(const Reader *r, const XmlNode *root, LpS3CompleteRequest *out)
{
	size_t		part = 0;

	out->num_parts = count_children(r, root, "Part");
	if (out->num_parts == 0)
		return field_error(r, root, "Part", "is missing");
	if (out->num_parts > LP_S3_MAX_PARTS)
		return field_error(r, root, "Part", "appears more than 10000 times");
	if (!alloc_entries(r, out->num_parts, sizeof(LpS3Part), (void **) &out->parts))
		return false;
	for (int32_t i = root->first_child; i >= 0; i = r->p->nodes[i].next_sibling)
	{
		const XmlNode *child = &r->p->nodes[i];
		LpS3Part   *entry;

		if (!is_named(r, child, "Part"))
			continue;
		entry = &out->parts[part];
		if (!field_part_number(r, child, part > 0 ? out->parts[part - 1].part_number : 0,
							   &entry->part_number) ||
			!field_nonempty(r, child, "ETag", &entry->etag))
			return false;
		part++;
	}
	return true;
}

static bool
read_document(const Reader *r, LpS3Document *doc)
{
	const XmlNode *root = &r->p->nodes[r->p->root];

	switch (doc->kind)
	{
		case LP_S3_ERROR:
			return read_error(r, root, &doc->error);
		case LP_S3_LIST_OBJECTS:
			return read_list_objects(r, root, &doc->list_objects);
		case LP_S3_INITIATE_MULTIPART:
			return field_nonempty(r, root, "Bucket", &doc->initiate.bucket) &&
				field_nonempty(r, root, "Key", &doc->initiate.key) &&
				field_nonempty(r, root, "UploadId", &doc->initiate.upload_id);
		case LP_S3_COMPLETE_MULTIPART:
			return field_text(r, root, "Location", false, &doc->complete.location) &&
				field_nonempty(r, root, "Bucket", &doc->complete.bucket) &&
				field_nonempty(r, root, "Key", &doc->complete.key) &&
				field_nonempty(r, root, "ETag", &doc->complete.etag);
		case LP_S3_COPY_PART:
		case LP_S3_COPY_OBJECT:
			return field_nonempty(r, root, "ETag", &doc->copy.etag) &&
				field_timestamp(r, root, "LastModified", false, &doc->copy.has_last_modified,
								&doc->copy.last_modified);
		case LP_S3_LIST_MULTIPART_UPLOADS:
			return read_list_uploads(r, root, &doc->list_uploads);
		case LP_S3_LIST_PARTS:
			return read_list_parts(r, root, &doc->list_parts);
		case LP_S3_COMPLETE_MULTIPART_REQUEST:
			return read_complete_request(r, root, &doc->complete_request);
	}
	return lp_fail(r->p->err, LP_ERR_INTERNAL, "unknown S3 document kind %d", (int) doc->kind);
}

const char *
lp_s3_xml_root_name(LpS3DocumentKind kind)
{
	switch (kind)
	{
		case LP_S3_ERROR:
			return "Error";
		case LP_S3_LIST_OBJECTS:
			return "ListBucketResult";
		case LP_S3_INITIATE_MULTIPART:
			return "InitiateMultipartUploadResult";
		case LP_S3_COMPLETE_MULTIPART:
			return "CompleteMultipartUploadResult";
		case LP_S3_COPY_PART:
			return "CopyPartResult";
		case LP_S3_COPY_OBJECT:
			return "CopyObjectResult";
		case LP_S3_LIST_MULTIPART_UPLOADS:
			return "ListMultipartUploadsResult";
		case LP_S3_LIST_PARTS:
			return "ListPartsResult";
		case LP_S3_COMPLETE_MULTIPART_REQUEST:
			return "CompleteMultipartUpload";
	}
	return "(unknown)";
}

void
lp_s3_xml_free(LpS3Document *document)
{
	if (document == NULL)
		return;
	switch (document->kind)
	{
		case LP_S3_LIST_OBJECTS:
			lp_free(document->list_objects.objects);
			lp_free(document->list_objects.common_prefixes);
			break;
		case LP_S3_LIST_MULTIPART_UPLOADS:
			lp_free(document->list_uploads.uploads);
			break;
		case LP_S3_LIST_PARTS:
			lp_free(document->list_parts.parts);
			break;
		case LP_S3_COMPLETE_MULTIPART_REQUEST:
			lp_free(document->complete_request.parts);
			break;
		default:
			break;
	}
	lp_free(document->text);
	lp_free(document);
}

bool
lp_s3_xml_parse(const char *body, size_t len, LpS3DocumentKind expected,
				LpS3Document **document, LpError *err)
{
	XmlParser	p = {.body = body, .len = len, .err = err};
	Reader		r = {.p = &p};
	LpS3Document *doc = NULL;
	const char *expected_name = lp_s3_xml_root_name(expected);
	bool		ok = false;

	*document = NULL;
	if (!parse_tree(&p))
		goto done;
	doc = lp_alloc0(sizeof(LpS3Document));
	if (doc == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading an S3 %s document", expected_name);
		goto done;
	}
	r.document = expected_name;
	if (is_named(&r, &p.nodes[p.root], expected_name))
		doc->kind = expected;
	else if (is_named(&r, &p.nodes[p.root], "Error"))
		doc->kind = LP_S3_ERROR;
	else
	{
		const XmlNode *root = &p.nodes[p.root];

		lp_fail(err, LP_ERR_CORRUPT, "malformed S3 %s document: the root element is <%.*s>",
				expected_name, quoted_len(root), body + root->local_off);
		goto done;
	}
	r.document = lp_s3_xml_root_name(doc->kind);
	ok = read_document(&r, doc);
	if (ok)
	{
		/* the strings of the document point into the arena */
		doc->text = p.arena;
		p.arena = NULL;
	}

done:
	lp_free(p.nodes);
	lp_free(p.arena);
	if (!ok)
		lp_s3_xml_free(doc);
	else
		*document = doc;
	return ok;
}

/* ---- the CompleteMultipartUpload request -------------------------------- */

#define REQUEST_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" \
	"<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define REQUEST_TAIL "</CompleteMultipartUpload>"
#define PART_HEAD "<Part><PartNumber>"
#define PART_MIDDLE "</PartNumber><ETag>"
#define PART_TAIL "</ETag></Part>"

/* The escape of c in text, or NULL if it stands for itself. */
static const char *
escape_of(char c)
{
	switch (c)
	{
		case '&':
			return "&amp;";
		case '<':
			return "&lt;";
		case '>':
			return "&gt;";
		case '"':
			return "&quot;";
		case '\'':
			return "&apos;";
		case '\r':
			/* a raw CR would be read back as a line end */
			return "&#13;";
		default:
			return NULL;
	}
}

static size_t
escaped_len(const char *s)
{
	size_t		n = 0;

	for (; *s != '\0'; s++)
	{
		const char *escape = escape_of(*s);

		n += escape == NULL ? 1 : strlen(escape);
	}
	return n;
}

static char *
append(char *out, const char *s, size_t n)
{
	memcpy(out, s, n);
	return out + n;
}

bool
lp_s3_xml_complete_request(const LpS3Part *parts, size_t num_parts, char **body, size_t *len,
						   LpError *err)
{
	uint64_t	total = strlen(REQUEST_HEAD) + strlen(REQUEST_TAIL);
	char	   *out;
	char	   *cursor;

	*body = NULL;
	*len = 0;
	if (num_parts < 1 || num_parts > LP_S3_MAX_PARTS)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "a multipart upload has 1 to %d parts, not %zu", LP_S3_MAX_PARTS, num_parts);
	for (size_t i = 0; i < num_parts; i++)
	{
		const LpS3Part *part = &parts[i];
		size_t		etag_len;
		uint32_t	code_point;
		uint64_t	part_len;

		if (part->part_number < 1 || part->part_number > LP_S3_MAX_PARTS)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "part number %u is not between 1 and %d", part->part_number, LP_S3_MAX_PARTS);
		if (i > 0 && part->part_number <= parts[i - 1].part_number)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "part number %u follows part number %u: parts must be in ascending order",
						   part->part_number, parts[i - 1].part_number);
		etag_len = part->etag == NULL ? 0 : strlen(part->etag);
		if (etag_len == 0)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "part number %u has no ETag",
						   part->part_number);
		if (find_bad_char(part->etag, etag_len, &code_point) < etag_len)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "the ETag of part number %u is not UTF-8 text XML can carry",
						   part->part_number);
		/* at most 5 digits of part number */
		part_len = strlen(PART_HEAD) + 5 + strlen(PART_MIDDLE) + strlen(PART_TAIL);
		if (!lp_add_u64(part_len, escaped_len(part->etag), &part_len) ||
			!lp_add_u64(total, part_len, &total))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "CompleteMultipartUpload request body is too large");
	}
	if (total >= SIZE_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "CompleteMultipartUpload request body is too large");
	out = lp_alloc((size_t) total + 1);
	if (out == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY,
					   "out of memory writing a CompleteMultipartUpload request of %zu parts", num_parts);
	cursor = append(out, REQUEST_HEAD, strlen(REQUEST_HEAD));
	for (size_t i = 0; i < num_parts; i++)
	{
		char		number[8];
		int			digits = snprintf(number, sizeof(number), "%u", parts[i].part_number);

		cursor = append(cursor, PART_HEAD, strlen(PART_HEAD));
		cursor = append(cursor, number, (size_t) digits);
		cursor = append(cursor, PART_MIDDLE, strlen(PART_MIDDLE));
		for (const char *s = parts[i].etag; *s != '\0'; s++)
		{
			const char *escape = escape_of(*s);

			cursor = escape == NULL ? append(cursor, s, 1) : append(cursor, escape, strlen(escape));
		}
		cursor = append(cursor, PART_TAIL, strlen(PART_TAIL));
	}
	cursor = append(cursor, REQUEST_TAIL, strlen(REQUEST_TAIL));
	*cursor = '\0';
	*body = out;
	*len = (size_t) (cursor - out);
	return true;
}

#!/usr/bin/env python3
"""Expected decodings of HTML character references, from Python's own `html.unescape`.

colswarm's decoder (crates/colswarm-tables/src/html_entities.rs) is written from HTML 4's
entity list and HTML5's numeric rules; this script asks the standard library instead, so the
Rust test that reads its output checks one implementation against another.

Two documented differences are applied here, not hidden in the comparison: U+00A0 (`&nbsp;`,
`&#160;`) becomes a plain space, and a numeric reference that is no character (0, a surrogate,
past U+10FFFF, or 128-159 where Windows-1252 has none) is kept as written where
`html.unescape` gives U+FFFD or the C1 control.

It writes tests/fixtures/html_entities.tsv: one `reference<TAB>decoded` line per case (the
named references colswarm knows, every one T2D holds, and random numeric ones), with tabs,
newlines and backslashes in the decoded text escaped as \\t, \\n and \\\\.

Run from the repository root:  python3 tests/reference/html_entities_reference.py [--seed N]
"""
import argparse
import html
import random
import re

HTML4_AND_APOS = """quot amp apos lt gt iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy
reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34
iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute
Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml
Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml
igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute
ucirc uuml yacute thorn yuml OElig oelig Scaron scaron Yuml fnof circ tilde Alpha Beta Gamma
Delta Omega alpha beta gamma delta lambda mu pi sigma omega ensp emsp thinsp zwnj zwj lrm rlm
ndash mdash lsquo rsquo sbquo ldquo rdquo bdquo dagger Dagger bull hellip permil prime Prime
lsaquo rsaquo oline frasl euro trade larr uarr rarr darr harr minus infin asymp ne le ge
nbsp""".split()

# Every reference the T2D tables hold (`grep -o '&[#a-zA-Z0-9]*;'` over its tables).
T2D = """&#1044; &#107; &#1072; &#1073; &#1074; &#1076; &#1077; &#108; &#1080; &#1083; &#1084;
&#1085; &#1088; &#1091; &#1093; &#110; &#112; &#114; &#115; &#116; &#122; &#145; &#146; &#148;
&#1547; &#160; &#162; &#163; &#165; &#167; &#227; &#228; &#232; &#233; &#237; &#244; &#246;
&#252; &#257; &#268; &#269; &#275; &#299; &#322; &#333; &#337; &#356; &#363; &#36; &#3647;
&#402; &#46; &#47; &#6107; &#65020; &#66; &#67; &#68; &#70; &#71; &#72; &#74; &#75; &#76; &#77;
&#78; &#80; &#81; &#8211; &#82; &#8217; &#8220; &#8221; &#83; &#8353; &#8356; &#8358; &#8360;
&#8361; &#8362; &#8363; &#8364; &#8365; &#8366; &#8369; &#8372; &#8482; &#84; &#85; &#90; &#91;
&#93; &#955; &#98; &#038; &#039; &#39; &#x2022; &aacute; &acirc; &acute; &amp; &atilde; &auml;
&ccedil; &cent; &dagger; &darr; &deg; &eacute; &ecirc; &egrave; &euml; &euro; &gt; &hellip;
&iacute; &icirc; &igrave; &iquest; &iuml; &laquo; &ldquo; &lt; &mdash; &middot; &nbsp; &ndash;
&ntilde; &oacute; &ocirc; &oslash; &ouml; &pound; &quot; &raquo; &rdquo; &reg; &rsquo; &scaron;
&sup2; &szlig; &trade; &uacute; &uarr; &ucirc; &Ugrave; &uml; &uuml; &yacute; &yen;""".split()


def expected(reference):
    number = re.fullmatch(r"&#([xX][0-9a-fA-F]+|[0-9]+);", reference)
    if number:
        digits = number.group(1)
        code = int(digits[1:], 16) if digits[0] in "xX" else int(digits)
        no_character = (
            code == 0
            or 0xD800 <= code <= 0xDFFF
            or code > 0x10FFFF
            or code in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
        )
        if no_character:
            return reference
    return html.unescape(reference).replace("\u00a0", " ")


def escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="tests/fixtures/html_entities.tsv")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    cases = [f"&{name};" for name in HTML4_AND_APOS] + T2D
    for _ in range(200):
        code = rng.choice([rng.randrange(1, 0x100), rng.randrange(0x100, 0x3000),
                           rng.randrange(0xD000, 0xE100), rng.randrange(0x10000, 0x110010)])
        cases.append(f"&#{code};" if rng.random() < 0.5 else f"&#x{code:X};")
    for code in range(0x80, 0xA0):
        cases.append(f"&#{code};")
    cases = list(dict.fromkeys(cases))

    with open(args.out, "w", encoding="utf-8") as out:
        for case in cases:
            out.write(f"{case}\t{escape(expected(case))}\n")
    print(f"{len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()

"""A tiny textbook written as real PDFs (one text line per line, Helvetica) for the knowledge-base tests.

Two chapters and a table of contents, with every kind of numbered item the ingest recognises, cross
references between them, footers with printed page numbers and running headers.
"""

from __future__ import annotations

from functions.rag.index import SourcePdf
from tests.support.pdfgen import PAGE_HEIGHT, TextRun, build_pdf

LINE_HEIGHT = 14


def make_pdf(pages: list[list[str]]) -> bytes:
    """Pages showing the given lines from the top, one per text line."""
    return build_pdf(
        [
            [TextRun(50, PAGE_HEIGHT - 50 - LINE_HEIGHT * row, 10, line) for row, line in enumerate(lines)]
            for lines in pages
        ]
    )


TOC_PAGES = [
    ["Decisions Under Uncertainty", "A. Author"],
    [
        "Contents",
        "Contents v",
        "1 Belief States and Planning 1",
        "1.1 Belief states . . . . . . . . . . . . . . . . . . . 1",
        "1.2 Value iteration . . . . . . . . . . . . . . . . . . 2",
        "1.2.1 Convergence analysis . . . . . . . . . . . . . . 3",
        "1.3 Q&A . . . . . . . . . . . . . . . . . . . . . . . . 3",
        "2 Inventory Control 5",
        "2.1 Demand models . . . . . . . . . . . . . . . . . . . 5",
        "2.2 The (s,S) policy . . . . . . . . . . . . . . . . . . 6",
        "A Probability Background 9",
        "A.1 Random variables . . . . . . . . . . . . . . . . . 9",
        "Bibliography 12",
    ],
]

CHAPTER_1 = [
    [
        "Chapter 1",
        "Belief States and Planning",
        "Figure 1.1: Where we are in this book.",
        "This chapter studies partially observable Markov decision processes, called POMDP models,",
        "in which the agent keeps a belief state over hidden states.",
        "1.1 Belief states",
        "A belief state is a probability distribution over the hidden states of the POMDP.",
        "After taking an action and receiving an observation, the belief state is updated by",
        "b'(s') = eta O(o|s') sum T(s'|s,a) b(s), (1.1)",
        "which is the Bayes rule applied to the hidden state. The POMDP belief update is summarized",
        "in Algorithm 1.1 and uses the normalizer eta defined in (1.1).",
        "1",
    ],
    [
        "1.1. Belief states",
        "Algorithm 1.1: Belief update for a POMDP",
        "Input: belief b, action a, observation o.",
        "For every hidden state s', compute the unnormalized belief using (1.1).",
        "Normalize the belief so that it sums to one.",
        "1.2 Value iteration",
        "Value iteration repeatedly applies the Bellman optimality operator",
        "v_k+1 = max_a ( r_a + gamma P_a v_k ), (1.2)",
        "until the values converge, see Section 1.1 and the analysis in [3].",
        "Table 1.1 lists the value estimates of the first iterations.",
        "k v(s1) v(s2)",
        "0 0.0 0.0",
        "1 1.0 0.5",
        "Table 1.1: Value estimates of value iteration at the first iterations.",
        "2",
    ],
    [
        "1.2. Value iteration",
        "1.2.1 Convergence analysis",
        "The Bellman optimality operator is a contraction mapping with factor gamma.",
        "Box 1.1: Proof of the convergence of (1.2)",
        "Let delta_k be the error of v_k. Since the operator is a contraction, delta_k shrinks",
        "geometrically and the iteration converges to the optimal value.",
        "Example 1.1. Consider a two-state problem with gamma 0.9 and rewards 1 and 0.",
        "The values converge after about fifty iterations, as Figure 1.2 shows.",
        "Figure 1.2: Convergence of value iteration on the two-state example.",
        "1.3 Q&A",
        "Q: What is a belief state?",
        "A: A probability distribution over hidden states, updated with Algorithm 1.1.",
        "Q: Does value iteration always converge?",
        "A: Yes, because the Bellman optimality operator is a contraction (Box 1.1).",
        "3",
    ],
]

CHAPTER_2 = [
    [
        "Chapter 2",
        "Inventory Control",
        "This chapter applies the methods of Chapter 1 to inventory control under uncertainty.",
        "2.1 Demand models",
        "Daily demand is modelled as a Poisson random variable with mean lambda (Appendix A).",
        "The expected cost of holding stock is",
        "C(x) = h E[(x - D)+] + p E[(D - x)+], (2.1)",
        "where h is the holding cost and p the shortage penalty.",
        "Table 2.1: Demand statistics of the warehouse network.",
        "5",
    ],
    [
        "2.1. Demand models",
        "2.2 The (s,S) policy",
        "An (s,S) inventory policy orders up to S whenever the stock falls below s.",
        "Algorithm 2.1: (s,S) inventory policy",
        "Observe the stock level x.",
        "If x < s, order S - x units, which minimizes the cost (2.1).",
        "Otherwise, order nothing.",
        "The reorder point s trades the holding cost against the shortage penalty.",
        "6",
    ],
]


def tiny_book() -> list[SourcePdf]:
    return [
        SourcePdf("00_contents.pdf", make_pdf(TOC_PAGES)),
        SourcePdf("ch01.pdf", make_pdf(CHAPTER_1)),
        SourcePdf("ch02.pdf", make_pdf(CHAPTER_2)),
    ]

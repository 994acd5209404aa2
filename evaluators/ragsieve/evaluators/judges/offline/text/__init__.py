"""Text helpers of the offline judges: words, terms and the shapes of questions and answers.

Takes plain strings; gives folded words, sentences and rarity (``text``), term matching across
spellings, typos and languages (``terms``), named spans (``spans``), the answer type a question
expects (``question``), checks of choice and comparison answers (``choice``, ``compare``),
misspelt words (``spelling``, ``typos``) and an answer's structure, which is not a claim
(``reading``). Nothing here knows about judges or records.
"""
